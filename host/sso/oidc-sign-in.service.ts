import { createHash, randomBytes } from 'node:crypto';
import type * as Oidc from 'openid-client';
import { HOUR, MINUTE, SECOND, type Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { DirectoryPeople } from '../identity/directory-people.service.ts';
import type { Person } from '../identity/people.model.ts';
import type { RateLimits } from '../identity/rate-limits.ts';
import type { SessionService } from '../identity/session.service.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { SecretCipher } from '../secrets/cipher.ts';
import { clip } from '../text.ts';
import { grant } from './group-mapping.ts';
import { openid } from './openid.ts';
import { CALLBACK_PATH, isLoopback } from './sso-settings.service.ts';
import type { OidcSettings } from './sso-settings.ts';
import type { SsoLoginsRepo } from './sso-logins.repo.ts';
import type { ConsoleAddress, SsoSettingsStore } from './sso-store.ts';
import type { SsoTicketsRepo } from './sso-tickets.repo.ts';
import type { SsoGrantsRepo } from './sso-grants.repo.ts';

/** A login under way lives this long (the person signs in at the provider meanwhile). */
export const LOGIN_TTL_MS = 10 * MINUTE;
/** A ticket is redeemed within this. */
export const TICKET_TTL_MS = 60 * SECOND;
/** How long the provider's metadata and keys are trusted before they are read again. */
const CONFIG_TTL_MS = HOUR;

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

export interface SsoSignedIn {
  token: string;
  user: Pick<Person, 'email' | 'name' | 'role' | 'teams' | 'tags'>;
  /** Where the console goes back to (a path of the console). */
  return_to: string;
}

export interface OidcDeps {
  store: SsoSettingsStore;
  address: ConsoleAddress;
  logins: SsoLoginsRepo;
  tickets: SsoTicketsRepo;
  grants: Pick<SsoGrantsRepo, 'put'>;
  cipher: SecretCipher;
  limits: RateLimits;
  sessions: SessionService;
  people: DirectoryPeople;
  /** The person of an address (identity's PeopleDirectory). */
  person(email: string): Promise<Person | null>;
  admits(email: string): Promise<boolean>;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
}

/** Why a sign-in through the provider was refused: one event says it, the console shows it. */
export type SsoRefusal =
  | 'not_configured'
  | 'state'
  | 'provider_error'
  | 'signature'
  | 'audience'
  | 'expired'
  | 'nonce'
  | 'issuer'
  | 'code_rejected'
  | 'token'
  | 'no_address'
  | 'email_not_verified'
  | 'outside_policy'
  | 'not_added'
  | 'no_mapped_group'
  | 'disabled';

/** A path of this console to go back to: `/…`, never `//host` or a scheme. */
export function safeReturn(path: string | undefined | null): string {
  if (typeof path !== 'string' || path.length > 500 || !path.startsWith('/') || path.startsWith('//') || path.includes('\\') || /[\u0000-\u001f]/.test(path))
    return '/';
  return path;
}

/** What the library says went wrong: its message, the OAuth error and the check that failed (`cause`). */
function describeError(err: unknown): string {
  const e = err as { message?: string; error?: string; error_description?: string; cause?: { message?: string } } | null;
  return [e?.message, e?.error, e?.error_description, e?.cause?.message].filter((x) => typeof x === 'string' && x !== '').join(': ');
}

/** The library's word for a failed token check, as one of ours. */
function refusalOf(err: unknown): SsoRefusal {
  const m = describeError(err).toLowerCase();
  if (m.includes('invalid_grant')) return 'code_rejected';
  if (m.includes('nonce')) return 'nonce';
  if (m.includes('"aud"') || m.includes('audience')) return 'audience';
  if (m.includes('"exp"') || m.includes('expired') || m.includes('timestamp check')) return 'expired';
  if (m.includes('"iss"') || m.includes('issuer')) return 'issuer';
  if (m.includes('signature') || m.includes('jwks') || m.includes('no applicable key') || m.includes('key')) return 'signature';
  return 'token';
}

/**
 * Single sign-on with OIDC (openid-client): the authorization code flow with PKCE (S256),
 * `state` and `nonce` kept server-side, single use, ten minutes. The library verifies the ID
 * token (signature against the provider's published keys, issuer, audience, expiry, nonce); the
 * service never sees a password. The callback ends at `/?sso=<ticket>`, redeemed once within
 * 60 s for the session. A refusal is one `identity.sso_refused` event saying why, and makes
 * nothing: no person, no ticket, no session.
 */
export class OidcSignIn {
  readonly #d: OidcDeps;
  #config: { key: string; at: number; config: Promise<Oidc.Configuration> } | null = null;

  constructor(deps: OidcDeps) {
    this.#d = deps;
  }

  async #settings(): Promise<{ oidc: OidcSettings; address: string; s: Awaited<ReturnType<SsoSettingsStore['load']>> }> {
    const s = await this.#d.store.load();
    const address = await this.#d.address.get();
    if (s.oidc === null || address === null) throw new AppError('sso_not_configured', 'single sign-on is not configured');
    return { oidc: s.oidc, address, s };
  }

  /** The provider's configuration (its metadata and keys), read once an hour or when the settings change. */
  async #configuration(o: OidcSettings): Promise<Oidc.Configuration> {
    const oidc = await openid();
    const key = sha256(JSON.stringify([o.issuer, o.client_id, o.client_secret]));
    const now = performance.now();
    if (this.#config === null || this.#config.key !== key || now - this.#config.at > CONFIG_TTL_MS) {
      const server = new URL(o.issuer);
      const auth = o.client_secret === null ? oidc.None() : oidc.ClientSecretBasic(o.client_secret);
      const config = oidc.discovery(server, o.client_id, undefined, auth, {
        // The ID token's signature is checked against the provider's published keys (JWKS) even
        // though it comes straight from the token endpoint, where OIDC would let TLS stand in for
        // it. Plain http only to a provider on this machine (tests); anything else must be https.
        execute: [oidc.enableNonRepudiationChecks, ...(server.protocol === 'http:' && isLoopback(server.hostname) ? [oidc.allowInsecureRequests] : [])],
        timeout: 30,
      });
      this.#config = { key, at: now, config };
      config.catch(() => {
        if (this.#config?.config === config) this.#config = null;
      });
    }
    return this.#config.config;
  }

  /** Reads the provider's metadata now (POST /v1/settings/sso/test). */
  async test(o: OidcSettings): Promise<{ ok: boolean; problem: string | null; issuer: string }> {
    this.#config = null;
    try {
      const c = await this.#configuration(o);
      return { ok: true, problem: null, issuer: c.serverMetadata().issuer };
    } catch (err) {
      return { ok: false, problem: clip(err instanceof Error ? err.message : String(err), 500, '…'), issuer: o.issuer };
    }
  }

  /** GET /v1/auth/sso/start: where to send the browser. */
  async start(returnTo: string | undefined, client: string): Promise<string> {
    await this.#d.limits.take([['sso_client', client]]);
    const { oidc: o, address } = await this.#settings();
    const config = await this.#configuration(o).catch((err: unknown) => {
      this.#d.log.warn({ err: { message: (err as Error).message } }, 'single sign-on: the provider could not be read');
      throw new AppError('sso_unavailable', 'the identity provider cannot be reached: try again later');
    });
    const oidc = await openid();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const verifier = oidc.randomPKCECodeVerifier();
    const now = this.#d.clock.now().getTime();
    await this.#d.logins.insert({
      state_hash: sha256(state),
      secrets: this.#d.cipher.encrypt(JSON.stringify({ nonce, verifier })),
      return_to: safeReturn(returnTo),
      created_ms: now,
      expires_ms: now + LOGIN_TTL_MS,
    });
    return oidc
      .buildAuthorizationUrl(config, {
        redirect_uri: address + CALLBACK_PATH,
        scope: o.scopes,
        response_type: 'code',
        state,
        nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      })
      .toString();
  }

  /** GET /v1/auth/sso/callback: where to send the browser (`/?sso=<ticket>`, or `/?sso_error=<why>`). */
  async callback(query: string, client: string): Promise<string> {
    await this.#d.limits.take([['sso_client', client]]);
    const params = new URLSearchParams(query);
    const state = params.get('state') ?? '';
    let settings;
    try {
      settings = await this.#settings();
    } catch {
      return this.#refuse('not_configured', client, 'single sign-on is not configured');
    }
    const { oidc: o, address, s } = settings;
    const now = this.#d.clock.now().getTime();
    const login = await this.#d.ledger.transact((trx) => this.#d.logins.use(trx, sha256(state), now));
    if (typeof login === 'string')
      return this.#refuse('state', client, `the state is ${login === 'unknown' ? 'not one this service gave' : login === 'used' ? 'used already' : 'expired'}`);
    if (params.has('error'))
      return this.#refuse(
        'provider_error',
        client,
        `the provider answered ${clip(params.get('error') ?? '', 100)}: ${clip(params.get('error_description') ?? '', 300)}`,
      );
    const { nonce, verifier } = JSON.parse(this.#d.cipher.decrypt(login.secrets)) as { nonce: string; verifier: string };
    let tokens;
    try {
      const config = await this.#configuration(o);
      tokens = await (
        await openid()
      ).authorizationCodeGrant(config, new URL(`${address}${CALLBACK_PATH}?${params.toString()}`), {
        pkceCodeVerifier: verifier,
        expectedState: state,
        expectedNonce: nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      const why = refusalOf(err);
      return this.#refuse(why, client, `the provider's answer failed its check: ${clip(describeError(err), 400, '…')}`);
    }
    const claims: Record<string, unknown> = { ...(tokens.claims() ?? {}) };
    const rawEmail = claims[o.email_claim];
    if (typeof rawEmail !== 'string' || !rawEmail.includes('@'))
      return this.#refuse('no_address', client, `the ID token has no address in its ${o.email_claim} claim`);
    const email = rawEmail.trim().toLowerCase();
    if (o.email_claim === 'email' && claims.email_verified === false)
      return this.#refuse('email_not_verified', client, 'the provider says the address is not verified', email);
    if (!(await this.#d.admits(email))) return this.#refuse('outside_policy', client, 'the access policy does not admit this address', email);
    const rawGroups = claims[o.groups_claim];
    const groups = (Array.isArray(rawGroups) ? rawGroups : typeof rawGroups === 'string' ? [rawGroups] : []).filter((g): g is string => typeof g === 'string');
    const name = typeof claims.name === 'string' ? claims.name : email;
    // No groups claim at all while a directory is synced: the sync decides the person's groups.
    const given =
      !(o.groups_claim in claims) && s.ldap !== null
        ? ('keep' as const)
        : grant(
            groups.map((g) => ({ name: g })),
            s.mappings,
          );
    const ticket = randomBytes(32).toString('base64url');
    const why = await this.#d.ledger
      .transact(
        async (trx, record) => {
          const admitted = await this.#d.people.admit(trx, record, { email, name, grant: given }, 'sso');
          if (!admitted.ok) {
            // Nothing half-made: the refusal's event is written after this rolls back.
            throw new Refused(admitted.why);
          }
          await this.#d.tickets.insert(trx, {
            ticket_hash: sha256(ticket),
            email,
            return_to: login.return_to,
            refresh_token: tokens.refresh_token === undefined ? null : this.#d.cipher.encrypt(tokens.refresh_token),
            created_ms: now,
            expires_ms: now + TICKET_TTL_MS,
          });
          return null;
        },
        { headFirst: true },
      )
      .catch((err: unknown) => {
        if (err instanceof Refused) return err.why;
        throw err;
      });
    if (why !== null)
      return this.#refuse(
        why,
        client,
        why === 'disabled' ? 'the person is disabled' : why === 'not_added' ? 'not an added person and in no mapped group' : 'in no mapped group',
        email,
      );
    return `/?sso=${encodeURIComponent(ticket)}`;
  }

  async #refuse(why: SsoRefusal, client: string, reason: string, email?: string): Promise<string> {
    await this.#d.ledger.append({
      type: 'identity.sso_refused',
      actor: email ?? 'anonymous',
      reason: `single sign-on refused: ${reason}`,
      data: { why, client, ...(email === undefined ? {} : { email }) },
    });
    return `/?sso_error=${why}`;
  }

  /** POST /v1/auth/sso/redeem: the session, once, within 60 s; every failure is 401 `invalid_ticket`. */
  async redeem(ticket: string, client: string): Promise<SsoSignedIn> {
    await this.#d.limits.take([['redeem_client', client]]);
    const s = await this.#d.store.load();
    const now = this.#d.clock.now().getTime();
    const outcome = await this.#d.ledger.transact(
      async (trx, record) => {
        const t = await this.#d.tickets.redeem(trx, sha256(ticket), now);
        if (typeof t === 'string') return t;
        const refreshable = t.refresh_token !== null;
        const { token } = await this.#d.sessions.open(trx, {
          email: t.email,
          actor: t.email,
          via: 'sso',
          // Without a refresh token the provider is asked again after recheck_hours: the session ends then.
          endsNoLaterThan: refreshable ? null : now + s.recheck_hours * HOUR,
        });
        if (s.oidc !== null && t.refresh_token !== null) {
          await this.#d.grants.put(trx, {
            email: t.email,
            refresh_token: t.refresh_token,
            issuer: s.oidc.issuer,
            next_check_ms: now + s.recheck_hours * HOUR,
            updated_ms: now,
          });
        }
        await record({
          type: 'identity.signed_in',
          actor: t.email,
          reason: 'signed in with single sign-on',
          data: { email: t.email, via: 'sso', client, refreshable },
        });
        return { token, email: t.email, return_to: t.return_to };
      },
      { headFirst: true },
    );
    if (typeof outcome === 'string') {
      await this.#d.ledger.append({
        type: 'identity.sso_refused',
        actor: 'anonymous',
        reason: `single sign-on ticket refused: ${outcome === 'unknown' ? 'not a ticket this service gave' : outcome === 'replayed' ? 'redeemed already' : 'older than 60 s'}`,
        data: { why: `ticket_${outcome}`, client },
      });
      throw new AppError('invalid_ticket', 'the sign-in ticket is unknown, used or expired: sign in again');
    }
    const p = await this.#d.person(outcome.email);
    if (p === null) throw new AppError('invalid_ticket', 'the person of this ticket no longer exists');
    return { token: outcome.token, user: { email: p.email, name: p.name, role: p.role, teams: p.teams, tags: p.tags }, return_to: outcome.return_to };
  }

  /** Forgets logins and tickets long past. */
  async prune(): Promise<void> {
    const before = this.#d.clock.now().getTime() - HOUR;
    await this.#d.logins.prune(before);
    await this.#d.tickets.prune(before);
  }

  /** The provider's configuration, for the recheck (oidc-recheck.ts). */
  async configuration(o: OidcSettings): Promise<Oidc.Configuration> {
    return this.#configuration(o);
  }
}

class Refused extends Error {
  readonly why: SsoRefusal;
  constructor(why: 'not_added' | 'disabled' | 'no_mapped_group') {
    super(why);
    this.why = why;
  }
}
