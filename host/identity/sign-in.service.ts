import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import { HOUR, MINUTE, type Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { PeopleRepo } from './people.repo.ts';
import type { Person } from './people.model.ts';
import { verifyPassword } from './password.ts';
import { limitKey, passwordAddress, rateLimited, type RateLimits } from './rate-limits.ts';
import type { Refusals } from './refusals.ts';
import type { AccessCheck, SessionService } from './session.service.ts';
import type { SignInCodesRepo } from './sign-in-codes.repo.ts';

export const CODE_TTL_MS = 10 * MINUTE;
export const CODE_TRIES = 5;

/** What sign-in needs of the mail area (mail/mail.service.ts). */
export interface CodeMailer {
  send(to: string, subject: string, text: string): Promise<{ ok: true } | { ok: false; reason: string }>;
}

export interface SignedIn {
  token: string;
  user: Pick<Person, 'email' | 'name' | 'role' | 'teams' | 'tags'>;
}

export interface SignInDeps {
  people: PeopleRepo;
  codes: SignInCodesRepo;
  limits: RateLimits;
  refusals: Refusals;
  sessions: SessionService;
  access: AccessCheck;
  mail: CodeMailer;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  /** The HMAC key for codes: derived from the secret key, which is not in the database. */
  codeKey: Buffer;
  /** Whether hand-added people may sign in by code or password (mixed mode, or no single sign-on). */
  localSignIn(): Promise<boolean>;
}

const normalise = (email: string): string => email.trim().toLowerCase();
const userOf = (p: Person): SignedIn['user'] => ({ email: p.email, name: p.name, role: p.role, teams: p.teams, tags: p.tags });

/**
 * Signing in by e-mailed code or by password (the admin token: admin-login.service.ts). Every answer
 * is the same whether or not the address exists or has access: the request for a code answers
 * before anything about the address is looked at (the lookup and the send happen after), and
 * a password for an unknown address is checked against a decoy hash.
 */
export class SignInService {
  readonly #d: SignInDeps;
  readonly #limits: RateLimits;
  readonly #pending = new Set<Promise<void>>();

  constructor(deps: SignInDeps) {
    this.#d = deps;
    this.#limits = deps.limits;
  }

  /** POST /v1/auth/request: counts the request, answers, then (maybe) sends a code. */
  async requestCode(emailIn: string, client: string): Promise<void> {
    const email = normalise(emailIn);
    try {
      // Both limits are checked and counted as one step under both subjects' locks: the client first.
      await this.#limits.take([
        ['code_client', client],
        ['code_address', email],
      ]);
    } catch (err) {
      // Recorded at most once a minute per client, with a count: a 429 costs the caller nothing.
      if (err instanceof AppError && err.code === 'rate_limited') await this.#d.refusals.noteAlone({ kind: 'code_client', subject: client }, 0, 1);
      throw err;
    }
    const work = this.#sendCode(email, client).catch((err: unknown) => this.#d.log.error({ err }, 'sending a sign-in code failed'));
    this.#pending.add(work);
    void work.finally(() => this.#pending.delete(work));
  }

  /** Resolves once every code asked for so far has been sent or given up (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }

  async #sendCode(email: string, client: string): Promise<void> {
    const { people, access, codes, mail, ledger, clock } = this.#d;
    const person = await people.get(email);
    if (person === null) {
      await ledger.append({
        type: 'identity.code_ignored',
        actor: email,
        reason: 'no one with this address may sign in: nothing sent',
        data: { email, client },
      });
      return;
    }
    const refused = !person.enabled
      ? 'the account is disabled'
      : person.directory
        ? 'directory people sign in through the directory or single sign-on'
        : !(await this.#d.localSignIn())
          ? 'sign-in by e-mailed code is off: single sign-on or the directory only'
          : !(await access.allows(email))
            ? 'the access policy does not admit this address'
            : null;
    if (refused !== null) {
      await ledger.append({ type: 'identity.code_refused', actor: email, reason: refused, data: { email, client } });
      return;
    }
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const now = clock.now().getTime();
    await codes.insert(null, { email, code_hmac: this.#hmac(email, code), created_ms: now, expires_ms: now + CODE_TTL_MS, tries: 0, used_ms: null });
    const sent = await mail.send(
      email,
      'Your sign-in code',
      `Your sign-in code is ${code}\n\nIt works once, for 10 minutes. If you did not ask for it, ignore this message.\n`,
    );
    if (sent.ok) await ledger.append({ type: 'identity.code_sent', actor: email, reason: 'sign-in code sent', data: { email, client } });
    else await ledger.append({ type: 'identity.code_failed', actor: email, reason: `the code could not be sent: ${sent.reason}`, data: { email, client } });
  }

  /**
   * POST /v1/auth/verify: a usable code of that address, once. Every failure is the same 401.
   * Each client checks at most 30 codes per 10 minutes (then 429), so that failures, each an
   * event, cannot be sent without end.
   */
  async verifyCode(emailIn: string, code: string, client: string): Promise<SignedIn> {
    const email = normalise(emailIn);
    await this.#limits.take([['verify_client', client]]);
    const { people, access, codes, sessions, ledger, clock } = this.#d;
    const given = this.#hmac(email, code);
    const now = clock.now().getTime();
    // Read before the transaction: on SQLite the transaction holds the only connection.
    const person = await people.get(email);
    const admitted = person !== null && person.enabled && !person.directory && (await this.#d.localSignIn()) && (await access.allows(email));
    const outcome = await ledger.transact(async (trx, record) => {
      const usable = await codes.usable(trx, email, now, CODE_TRIES);
      const match = usable.find((c) => timingSafeEqual(Buffer.from(c.code_hmac, 'hex'), Buffer.from(given, 'hex')));
      if (match === undefined || !admitted || !(await codes.use(trx, match.id, now))) {
        await codes.addTry(
          trx,
          usable.map((c) => c.id),
        );
        await record({
          type: 'identity.code_wrong',
          actor: email,
          reason: usable.length === 0 ? 'no usable code for this address' : 'wrong code',
          data: { email, client },
        });
        return null;
      }
      const { token } = await sessions.open(trx, { email, actor: email, via: 'code' });
      await record({ type: 'identity.signed_in', actor: email, reason: 'signed in with an e-mailed code', data: { email, via: 'code', client } });
      return { token, user: userOf(person!) };
    });
    if (outcome === null) throw new AppError('invalid_code', 'the code is wrong, used or expired');
    return outcome;
  }

  /**
   * POST /v1/auth/password. The client limit first (checked and counted in one step), then the
   * hash; every failure is the same 401. The outcome is decided in one transaction holding the
   * address's lock: whether the address is locked, the count of its wrong passwords, the lock
   * the fifth one sets, and the session of a right one. So a right password racing wrong ones
   * opens a session only if the address is not locked at that moment, however many wrong ones
   * were in flight, in this host process or another.
   */
  async withPassword(emailIn: string, password: string, client: string): Promise<SignedIn> {
    const email = normalise(emailIn);
    const { people, access, sessions, ledger, clock } = this.#d;
    const address = passwordAddress(email);
    const { locked } = await this.#limits.atomically([limitKey('password_client', client)], async (trx) => {
      const wait = await this.#limits.wait(trx, 'password_client', client);
      if (wait > 0) throw rateLimited(wait);
      await this.#limits.count(trx, 'password_client', client);
      // A hint only, to spare the hash: the decision below is taken again under the address's lock.
      return { locked: (await this.#limits.wait(trx, 'password_lock', email)) > 0 };
    });
    // The address's lock row is made to exist now (only for a try the client limit let through),
    // outside the transaction that locks it.
    await this.#limits.ensure([address]);
    const stored = locked ? null : await people.password(email);
    const right = await verifyPassword(password, stored?.hash ?? null, { client, nowMs: clock.now().getTime() });
    const expired = stored?.expires_at != null && Date.parse(stored.expires_at) <= clock.now().getTime();
    // Read before the transaction: on SQLite the transaction holds the only connection.
    const person = right && !expired ? await people.get(email) : null;
    const admitted =
      person !== null && person.enabled && person.role !== 'owner' && !person.directory && (await this.#d.localSignIn()) && (await access.allows(email));
    const outcome = await ledger.transact(async (trx, record) => {
      await this.#limits.lock(trx, [address]);
      const lockedNow = (await this.#limits.wait(trx, 'password_lock', email)) > 0;
      if (admitted && !lockedNow) {
        await this.#limits.clear(trx, 'password_wrong', email);
        const { token } = await sessions.open(trx, {
          email,
          actor: email,
          via: 'password',
          endsNoLaterThan: stored!.expires_at === null ? null : Date.parse(stored!.expires_at),
        });
        await record({ type: 'identity.signed_in', actor: email, reason: 'signed in with a password', data: { email, via: 'password', client } });
        return { token, user: userOf(person!) };
      }
      let locks = false;
      if (!lockedNow) {
        await this.#limits.count(trx, 'password_wrong', email);
        if ((await this.#limits.wait(trx, 'password_wrong', email)) > 0) {
          await this.#limits.count(trx, 'password_lock', email);
          await this.#limits.clear(trx, 'password_wrong', email);
          locks = true;
        }
      }
      const reason = lockedNow
        ? 'address locked after five wrong passwords'
        : locks
          ? 'wrong password: the fifth, the address is locked for 15 minutes'
          : 'wrong password';
      await record({ type: 'identity.password_wrong', actor: email, reason, data: { email, client, locked: lockedNow, locks } });
      return null;
    });
    if (outcome === null) throw new AppError('invalid_credentials', 'the address or password is wrong, or the address is locked for a while');
    return outcome;
  }

  /** Forgets expired codes, counted attempts older than every window, and long-ended sessions. */
  async prune(): Promise<void> {
    const now = this.#d.clock.now().getTime();
    await this.#d.codes.prune(now - HOUR);
    await this.#limits.prune(now - HOUR);
    await this.#d.sessions.prune();
  }

  #hmac(email: string, code: string): string {
    return createHmac('sha256', this.#d.codeKey).update(`${email}\n${code}`).digest('hex');
  }
}
