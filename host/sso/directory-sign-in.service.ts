import { randomBytes } from 'node:crypto';
import { SECOND, type Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { DirectoryPeople } from '../identity/directory-people.service.ts';
import type { Person } from '../identity/people.model.ts';
import { limitKey, type RateLimits } from '../identity/rate-limits.ts';
import type { SessionService } from '../identity/session.service.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import { grant } from './group-mapping.ts';
import { BindRefused, DirectoryUnreachable } from './ldap-connection.ts';
import { signInName } from './directory.ts';
import { passwordAccepted, withDirectory } from './open-directory.ts';
import type { SsoSettingsStore } from './sso-store.ts';

/** How long a sign-in waits for the directory (each address). */
export const SIGN_IN_TIMEOUT_MS = 10 * SECOND;

export interface DirectorySignedIn {
  token: string;
  user: Pick<Person, 'email' | 'name' | 'role' | 'teams' | 'tags'>;
}

export interface DirectorySignInDeps {
  store: SsoSettingsStore;
  limits: RateLimits;
  sessions: SessionService;
  people: DirectoryPeople;
  /** Whether the access policy admits an address. */
  admits(email: string): Promise<boolean>;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
}

type Why = 'bad_name' | 'name_limited' | 'unknown_name' | 'disabled' | 'wrong_password' | 'no_address' | 'outside_policy' | 'not_added' | 'no_mapped_group';

const REASONS: Record<Why, string> = {
  bad_name: 'not a sign-in name of this directory',
  name_limited: 'five failed tries for this name in 10 minutes: refused without asking the directory',
  unknown_name: 'no enabled person of this name in the directory',
  disabled: 'the directory account is disabled',
  wrong_password: 'the directory refused the password',
  no_address: 'the directory gives this person no address',
  outside_policy: 'the access policy does not admit this address',
  not_added: 'not an added person and in no mapped group',
  no_mapped_group: 'in no mapped group',
};

/**
 * POST /v1/auth/ldap: the password is checked by binding as the person over TLS, never stored
 * or logged. `DOMAIN\name`, `name@domain` and `name` find the same person and count under the
 * same name. 20 tries per client (then 429) and 5 failures per name per 10 minutes (then every
 * try fails without the directory being asked, so nobody can lock an account in the directory
 * through us); every failure is the same 401 `invalid_credentials` and one
 * `identity.directory_password_wrong` event saying why. A directory that cannot be reached is
 * 503 `directory_unavailable` whoever asks.
 */
export class DirectorySignIn {
  readonly #d: DirectorySignInDeps;

  constructor(deps: DirectorySignInDeps) {
    this.#d = deps;
  }

  async signIn(username: string, password: string, client: string): Promise<DirectorySignedIn> {
    const s = await this.#d.store.load();
    if (s.ldap === null) throw new AppError('directory_not_configured', 'directory sign-in is not configured');
    const ldap = s.ldap;
    await this.#d.limits.take([['ldap_client', client]]);
    const name = signInName(username, ldap);
    const nameKey = name?.key ?? username.trim().toLowerCase().slice(0, 256);
    // Every try counts against its name, checked and counted in one step under the name's lock
    // (a success clears the count): a sixth try within 10 minutes never reaches the directory.
    const limited = await this.#d.limits.atomically([limitKey('ldap_name', nameKey)], async (trx) => {
      if ((await this.#d.limits.wait(trx, 'ldap_name', nameKey)) > 0) return true;
      await this.#d.limits.count(trx, 'ldap_name', nameKey);
      return false;
    });
    if (limited) return this.#fail(nameKey, client, 'name_limited');
    if (name === null) return this.#fail(nameKey, client, 'bad_name');
    let outcome: { why: Why } | { dn: string; email: string | null; name: string; groups: ReturnType<typeof grant> };
    try {
      outcome = await withDirectory(ldap, SIGN_IN_TIMEOUT_MS, async (dir) => {
        const person = await dir.findPerson(name.short, name.full);
        if (person === null) {
          // The same work as a real bind, so that an unknown name does not answer sooner.
          await passwordAccepted(ldap, `cn=oncall-${randomBytes(8).toString('hex')},${ldap.base_dn}`, password || 'x', SIGN_IN_TIMEOUT_MS);
          return { why: 'unknown_name' as const };
        }
        if (person.disabled) return { why: 'disabled' as const };
        if (!(await passwordAccepted(ldap, person.dn, password, SIGN_IN_TIMEOUT_MS))) return { why: 'wrong_password' as const };
        return { dn: person.dn, email: person.email, name: person.name, groups: grant(await dir.groupsOf(person), s.mappings) };
      });
    } catch (err) {
      // The service's own account refused, or no address answered: nobody can be checked.
      if (!(err instanceof DirectoryUnreachable) && !(err instanceof BindRefused)) throw err;
      this.#d.log.warn({ err: { message: err.message } }, 'directory sign-in: the directory could not be reached');
      await this.#d.ledger.append({
        type: 'identity.directory_password_wrong',
        actor: nameKey,
        reason: 'the directory could not be reached with the service account: nobody could be checked',
        data: { username: nameKey, client, why: 'directory_unavailable' },
      });
      throw new AppError('directory_unavailable', 'the directory cannot be reached: try again later');
    }
    if ('why' in outcome) return this.#fail(nameKey, client, outcome.why);
    const email = outcome.email;
    if (email === null) return this.#fail(nameKey, client, 'no_address');
    if (!(await this.#d.admits(email))) return this.#fail(nameKey, client, 'outside_policy');
    const key = limitKey('ldap_name', nameKey);
    await this.#d.limits.ensure([key]);
    const done = await this.#d.ledger.transact(
      async (trx, record) => {
        await this.#d.limits.lock(trx, [key]);
        const admitted = await this.#d.people.admit(trx, record, { email, name: outcome.name, grant: outcome.groups }, 'directory');
        if (!admitted.ok) return admitted.why;
        await this.#d.limits.clear(trx, 'ldap_name', nameKey);
        const { token } = await this.#d.sessions.open(trx, { email, actor: email, via: 'ldap' });
        const p = admitted.person;
        await record({
          type: 'identity.signed_in',
          actor: email,
          reason: 'signed in with a directory password',
          data: { email, via: 'ldap', username: nameKey, client },
        });
        return { token, user: { email: p.email, name: p.name, role: p.role, teams: p.teams, tags: p.tags } };
      },
      { headFirst: true },
    );
    if (typeof done === 'string') return this.#fail(nameKey, client, done);
    return done;
  }

  /** Records why (the try was counted when it began) and answers the one 401. */
  async #fail(nameKey: string, client: string, why: Why): Promise<never> {
    await this.#d.ledger.append({
      type: 'identity.directory_password_wrong',
      actor: nameKey,
      reason: REASONS[why],
      data: { username: nameKey, client, why },
    });
    throw new AppError('invalid_credentials', 'the name or password is wrong, or this name may not sign in here');
  }
}
