import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { ClientAddress } from '../http/client-address.ts';
import type { IdentityArea } from '../identity/identity.area.ts';
import type { PeopleDirectory } from '../identity/people.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { Leases } from '../schedule/lease.model.ts';
import type { SecretCipher } from '../secrets/cipher.ts';
import { Revisions } from '../settings/revisions.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import type { Db } from '../storage/db.ts';
import { DirectorySignIn } from './directory-sign-in.service.ts';
import { DirectorySync } from './directory-sync.service.ts';
import { OidcRecheck } from './oidc-recheck.service.ts';
import { OidcSignIn } from './oidc-sign-in.service.ts';
import { SsoAdmin } from './sso-admin.service.ts';
import { SsoGrantsRepo } from './sso-grants.repo.ts';
import { SsoLoginsRepo } from './sso-logins.repo.ts';
import { SsoSettingsService } from './sso-settings.service.ts';
import type { SsoStore } from './sso-store.ts';
import { SsoTicketsRepo } from './sso-tickets.repo.ts';
import { CarriedSso } from './sso.carried.ts';
import { ssoRoutes } from './sso.routes.ts';

export interface SsoArea extends Area {
  readonly settings: SsoSettingsService;
  /** The directory sync; the tick calls `sync.tick()`, tests `sync.now()` or `sync.idle()`. */
  readonly sync: DirectorySync;
  readonly oidc: OidcSignIn;
  /** The provider asked again every recheck_hours (refresh tokens); the tick calls `recheck.tick()`. */
  readonly recheck: OidcRecheck;
  /** The single sign-on settings as the keychain carries them (sso.carried.ts). */
  readonly carried: CarriedSso;
  /** The tick: a due sync and recheck in the background, old logins and tickets forgotten. */
  tick(): Promise<void>;
  /** Resolves once background syncs and rechecks have ended. */
  idle(): Promise<void>;
}

/**
 * Single sign-on (OIDC) and directory (LDAP / Active Directory) sign-in, the directory sync and
 * their settings; owns the `sso`, `console_address` and `sso_sync` settings documents (the first
 * two through its store, built below the areas that read them) and `sso_logins`, `sso_tickets`,
 * `sso_grants`. People and sessions change only through the identity area (DirectoryPeople,
 * SessionService); its limits use identity's one mechanism; the sync and the recheck run under
 * the schedule's leases.
 */
export function createSsoArea(d: {
  db: Db;
  store: SsoStore;
  settings: SettingsStore;
  identity: Pick<IdentityArea, 'sessions' | 'access' | 'limits' | 'directoryPeople'>;
  people: PeopleDirectory;
  cipher: SecretCipher;
  leases: Leases;
  holder: string;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  config: Config;
}): SsoArea {
  const { store, ledger, clock, log } = d;
  const { sessions, limits, directoryPeople } = d.identity;
  const admits = (email: string) => d.identity.access.allows(email);
  const timeoutMs = d.config.discoverTimeoutS * 1000;
  const sync = new DirectorySync({
    store: store.settings,
    settings: d.settings,
    leases: d.leases,
    holder: d.holder,
    people: directoryPeople,
    admits,
    ledger,
    clock,
    log,
    timeoutMs,
  });
  const settings = new SsoSettingsService({
    store: store.settings,
    address: store.consoleAddress,
    sessions,
    lastSync: (trx) => sync.last(trx),
    revisions: new Revisions(d.settings),
    ledger,
    clock,
  });
  const grants = new SsoGrantsRepo(d.db);
  const oidc = new OidcSignIn({
    store: store.settings,
    address: store.consoleAddress,
    logins: new SsoLoginsRepo(d.db),
    tickets: new SsoTicketsRepo(d.db),
    grants,
    cipher: d.cipher,
    limits,
    sessions,
    people: directoryPeople,
    person: (email) => d.people.get(email),
    admits,
    ledger,
    clock,
    log,
  });
  const recheck = new OidcRecheck({
    store: store.settings,
    grants,
    signIn: oidc,
    people: directoryPeople,
    sessions,
    cipher: d.cipher,
    leases: d.leases,
    holder: d.holder,
    ledger,
    clock,
    log,
  });
  const directory = new DirectorySignIn({ store: store.settings, limits, sessions, people: directoryPeople, admits, ledger, clock, log });
  const admin = new SsoAdmin({ store: store.settings, oidc, ledger, timeoutMs });
  const carried = new CarriedSso({ store: store.settings, address: store.consoleAddress, sessions, revisions: new Revisions(d.settings), clock });
  return {
    settings,
    carried,
    sync,
    oidc,
    recheck,
    tick: async () => {
      sync.tick();
      recheck.tick();
      await oidc.prune();
    },
    idle: async () => {
      await sync.idle();
      await recheck.idle();
    },
    routes: ({ server, log, guard }: Http) =>
      ssoRoutes(server, { log, guard, client: new ClientAddress(d.config.trustedProxies), settings, admin, sync, directory, oidc }),
  };
}
