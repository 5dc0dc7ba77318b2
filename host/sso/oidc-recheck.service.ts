import { HOUR, MINUTE, type Clock } from '../clock.ts';
import type { DirectoryPeople } from '../identity/directory-people.service.ts';
import type { SessionService } from '../identity/session.service.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { SecretCipher } from '../secrets/cipher.ts';
import { clip } from '../text.ts';
import type { OidcSignIn } from './oidc-sign-in.service.ts';
import { openid } from './openid.ts';
import type { SsoGrantsRepo } from './sso-grants.repo.ts';
import type { SsoSettingsStore } from './sso-store.ts';

export const RECHECK_LEASE = 'sso_recheck';
/** A provider that could not be reached is asked again this much later (not a refusal). */
const RETRY_MS = 5 * MINUTE;

export interface OidcRecheckDeps {
  store: SsoSettingsStore;
  grants: SsoGrantsRepo;
  signIn: Pick<OidcSignIn, 'configuration'>;
  people: DirectoryPeople;
  sessions: SessionService;
  cipher: SecretCipher;
  leases: { take(name: string, holder: string, ttlMs: number, nowMs: number): Promise<boolean>; release(name: string, holder: string): Promise<void> };
  holder: string;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
}

/**
 * With refresh tokens, the provider is asked again every `recheck_hours` whether each person
 * may still sign in: a refusal (an OAuth error such as `invalid_grant`) suspends the person and
 * ends their sessions (never the last owner); a provider that cannot be reached is asked again
 * later. Under a lease, so that one host asks. Without refresh tokens the session itself ends
 * after `recheck_hours` (oidc-sign-in.service.ts).
 */
export class OidcRecheck {
  readonly #d: OidcRecheckDeps;
  #running: Promise<void> | null = null;

  constructor(deps: OidcRecheckDeps) {
    this.#d = deps;
  }

  tick(): void {
    if (this.#running !== null) return;
    this.#running = this.run()
      .catch((err: unknown) => this.#d.log.error({ err }, 'single sign-on recheck failed'))
      .finally(() => (this.#running = null));
  }

  async idle(): Promise<void> {
    while (this.#running !== null) await this.#running;
  }

  async run(): Promise<void> {
    const { grants, clock, leases, holder } = this.#d;
    if ((await grants.due(clock.now().getTime(), 1)).length === 0) return;
    if (!(await leases.take(RECHECK_LEASE, holder, 10 * MINUTE, clock.now().getTime()))) return;
    try {
      const oidc = await openid();
      const s = await this.#d.store.load();
      for (const g of await grants.due(clock.now().getTime())) {
        const now = clock.now().getTime();
        if (s.oidc === null || s.oidc.issuer !== g.issuer) {
          // Another provider (or none) now: this grant proves nothing; its sessions go through the provider again.
          await this.#d.ledger.transact(async (trx) => {
            await grants.remove(trx, g.email);
            await this.#d.sessions.endFor(trx, g.email, 'sso_recheck', 'sso');
          });
          continue;
        }
        try {
          const config = await this.#d.signIn.configuration(s.oidc);
          const tokens = await oidc.refreshTokenGrant(config, this.#d.cipher.decrypt(g.refresh_token));
          await grants.put(null, {
            ...g,
            refresh_token: tokens.refresh_token === undefined ? g.refresh_token : this.#d.cipher.encrypt(tokens.refresh_token),
            next_check_ms: now + s.recheck_hours * HOUR,
            updated_ms: now,
          });
        } catch (err) {
          if (err instanceof oidc.ResponseBodyError) await this.#refused(g.email, err.error);
          else {
            this.#d.log.warn({ err: { message: (err as Error)?.message } }, 'single sign-on recheck: the provider could not be asked');
            await grants.put(null, { ...g, next_check_ms: now + RETRY_MS, updated_ms: now });
          }
        }
      }
    } finally {
      await leases.release(RECHECK_LEASE, holder);
    }
  }

  async #refused(email: string, error: string): Promise<void> {
    await this.#d.ledger.transact(
      async (trx, record) => {
        await this.#d.grants.remove(trx, email);
        const r = await this.#d.people.suspendByProvider(trx, email);
        await record({
          type: 'identity.person_suspended',
          actor: 'sso',
          reason: r.last_owner
            ? `the identity provider refused ${email} (${clip(error, 100)}), who is the last enabled owner: kept`
            : `the identity provider refused ${email} (${clip(error, 100)}): suspended`,
          data: { email, why: 'provider_refused', error: clip(error, 100), suspended: r.suspended, sessions_ended: r.sessions_ended, last_owner: r.last_owner },
        });
      },
      { headFirst: true },
    );
  }
}
