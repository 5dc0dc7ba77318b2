import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import { HOUR, MINUTE, type Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { AttemptsRepo } from './attempts.repo.ts';
import type { Person, PeopleRepo } from './people.repo.ts';
import { verifyPassword } from './password.ts';
import { RateLimits, rateLimited } from './rate-limits.ts';
import type { AccessCheck, SessionService } from './session.service.ts';
import type { SignInCodesRepo } from './sign-in-codes.repo.ts';

export const CODE_TTL_MS = 10 * MINUTE;
export const CODE_TRIES = 5;

/** What sign-in needs of the mail area (mail/mail.service.ts). */
export interface CodeMailer {
  send(to: string, subject: string, text: string): Promise<{ ok: true } | { ok: false; reason: string }>;
  breakGlass(): Promise<{ open: boolean; reason: string | null }>;
}

export interface SignedIn {
  token: string;
  user: Pick<Person, 'email' | 'name' | 'role' | 'teams' | 'tags'>;
}

export interface SignInDeps {
  people: PeopleRepo;
  codes: SignInCodesRepo;
  attempts: AttemptsRepo;
  sessions: SessionService;
  access: AccessCheck;
  mail: CodeMailer;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  /** The HMAC key for codes: derived from the secret key, which is not in the database. */
  codeKey: Buffer;
}

const normalise = (email: string): string => email.trim().toLowerCase();
const userOf = (p: Person): SignedIn['user'] => ({ email: p.email, name: p.name, role: p.role, teams: p.teams, tags: p.tags });

/**
 * Signing in by e-mailed code or by password, and the admin token's break-glass. Every answer
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
    this.#limits = new RateLimits(deps.attempts, deps.clock);
  }

  /** POST /v1/auth/request: counts the request, answers, then (maybe) sends a code. */
  async requestCode(emailIn: string, client: string): Promise<void> {
    const email = normalise(emailIn);
    const { db } = this.#d.people;
    const limited = Math.max(await this.#limits.wait(db, 'code_address', email), await this.#limits.wait(db, 'code_client', client));
    if (limited > 0) {
      await this.#d.ledger.append({ type: 'identity.code_rate_limited', actor: email, reason: 'too many codes asked for', data: { email, client } });
      throw rateLimited(limited);
    }
    await this.#limits.count(db, 'code_address', email);
    await this.#limits.count(db, 'code_client', client);
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
      await ledger.append({ type: 'identity.code_ignored', actor: email, reason: 'no one with this address may sign in: nothing sent', data: { email, client } });
      return;
    }
    if (!person.enabled || !(await access.allows(email))) {
      await ledger.append({ type: 'identity.code_refused', actor: email, reason: person.enabled ? 'the access policy does not admit this address' : 'the account is disabled', data: { email, client } });
      return;
    }
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const now = clock.now().getTime();
    await codes.insert(codes.db, { email, code_hmac: this.#hmac(email, code), created_ms: now, expires_ms: now + CODE_TTL_MS, tries: 0, used_ms: null });
    const sent = await mail.send(email, 'Your sign-in code', `Your sign-in code is ${code}\n\nIt works once, for 10 minutes. If you did not ask for it, ignore this message.\n`);
    if (sent.ok) await ledger.append({ type: 'identity.code_sent', actor: email, reason: 'sign-in code sent', data: { email, client } });
    else await ledger.append({ type: 'identity.code_failed', actor: email, reason: `the code could not be sent: ${sent.reason}`, data: { email, client } });
  }

  /** POST /v1/auth/verify: a usable code of that address, once. Every failure is the same 401. */
  async verifyCode(emailIn: string, code: string, client: string): Promise<SignedIn> {
    const email = normalise(emailIn);
    const { people, access, codes, sessions, ledger, clock } = this.#d;
    const given = this.#hmac(email, code);
    const now = clock.now().getTime();
    // Read before the transaction: on SQLite the transaction holds the only connection.
    const person = await people.get(email);
    const admitted = person !== null && person.enabled && (await access.allows(email));
    const outcome = await ledger.transact(async (trx, record) => {
      const usable = await codes.usable(trx, email, now, CODE_TRIES);
      const match = usable.find((c) => timingSafeEqual(Buffer.from(c.code_hmac, 'hex'), Buffer.from(given, 'hex')));
      if (match === undefined || !admitted || !(await codes.use(trx, match.id, now))) {
        await codes.addTry(trx, usable.map((c) => c.id));
        await record({ type: 'identity.code_wrong', actor: email, reason: usable.length === 0 ? 'no usable code for this address' : 'wrong code', data: { email, client } });
        return null;
      }
      const { token } = await sessions.open(trx, { email, actor: email, via: 'code' });
      await record({ type: 'identity.signed_in', actor: email, reason: 'signed in with an e-mailed code', data: { email, via: 'code', client } });
      return { token, user: userOf(person!) };
    });
    if (outcome === null) throw new AppError('invalid_code', 'the code is wrong, used or expired');
    return outcome;
  }

  /** POST /v1/auth/password. Limits first, then the hash; every failure is the same 401. */
  async withPassword(emailIn: string, password: string, client: string): Promise<SignedIn> {
    const email = normalise(emailIn);
    const { people, access, sessions, ledger, clock } = this.#d;
    const { db } = people;
    await this.#limits.take(db, 'password_client', client);
    const locked = (await this.#limits.wait(db, 'password_lock', email)) > 0;
    const stored = locked ? null : await people.password(email);
    const right = await verifyPassword(password, stored?.hash ?? null);
    const now = clock.now();
    const expired = stored?.expires_at != null && Date.parse(stored.expires_at) <= now.getTime();
    const person = right && !expired ? await people.get(email) : null;
    if (person === null || !person.enabled || person.role === 'owner' || person.directory || !(await access.allows(email))) {
      if (!locked) {
        await this.#limits.count(db, 'password_wrong', email);
        if ((await this.#limits.wait(db, 'password_wrong', email)) > 0) {
          await this.#limits.count(db, 'password_lock', email);
          await this.#limits.clear(db, 'password_wrong', email);
        }
      }
      await ledger.append({ type: 'identity.password_wrong', actor: email, reason: locked ? 'address locked after five wrong passwords' : 'wrong password', data: { email, client, locked } });
      throw new AppError('invalid_credentials', 'the address or password is wrong, or the address is locked for a while');
    }
    await this.#limits.clear(db, 'password_wrong', email);
    return ledger.transact(async (trx, record) => {
      const { token } = await sessions.open(trx, { email, actor: email, via: 'password', endsNoLaterThan: stored!.expires_at === null ? null : Date.parse(stored!.expires_at) });
      await record({ type: 'identity.signed_in', actor: email, reason: 'signed in with a password', data: { email, via: 'password', client } });
      return { token, user: userOf(person) };
    });
  }

  /**
   * POST /v1/login with the admin token once the first owner exists: a break-glass session
   * while no code can be sent, else 403 use_email.
   */
  async adminLogin(client: string): Promise<{ break_glass: true; token: string }> {
    const { mail, sessions, ledger } = this.#d;
    const glass = await mail.breakGlass();
    if (!glass.open) {
      await ledger.append({ type: 'identity.token_sign_in_refused', actor: 'admin-token', reason: 'e-mail works: people sign in with their address', data: { client } });
      throw new AppError('use_email', 'sign in with your e-mail address');
    }
    return ledger.transact(async (trx, record) => {
      const { token } = await sessions.open(trx, { email: null, actor: 'admin-token', via: 'break_glass' });
      await record({ type: 'identity.break_glass', actor: 'admin-token', reason: `break-glass sign-in: ${glass.reason ?? 'no code can be sent'}`, data: { client, why: glass.reason } });
      return { break_glass: true as const, token };
    });
  }

  /** Forgets expired codes, counted attempts older than every window, and long-ended sessions. */
  async prune(): Promise<void> {
    const now = this.#d.clock.now().getTime();
    await this.#d.codes.prune(now - HOUR);
    await this.#d.attempts.prune(now - HOUR);
    await this.#d.sessions.prune();
  }

  #hmac(email: string, code: string): string {
    return createHmac('sha256', this.#d.codeKey).update(`${email}\n${code}`).digest('hex');
  }
}
