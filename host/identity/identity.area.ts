import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { ClientAddress } from '../http/client-address.ts';
import type { Install } from '../install/install.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { MailService } from '../mail/mail.service.ts';
import type { SecretCipher } from '../secrets/cipher.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import type { ModeService } from '../status/mode.service.ts';
import type { Db, Trx } from '../storage/db.ts';
import type { UnitOfWork } from '../storage/unit-of-work.ts';
import { accessRoutes } from './access.routes.ts';
import { AccessPolicyService } from './access.service.ts';
import { AdminLoginService } from './admin-login.service.ts';
import { AttemptsRepo } from './attempts.repo.ts';
import { authRoutes } from './auth.routes.ts';
import { BootstrapService } from './bootstrap.service.ts';
import { DirectoryPeople } from './directory-people.service.ts';
import { LimitLocksRepo } from './limit-locks.repo.ts';
import type { People } from './people.ts';
import { peopleRoutes } from './people.routes.ts';
import { PeopleService } from './people.service.ts';
import { RateLimits } from './rate-limits.ts';
import { Refusals } from './refusals.ts';
import { SessionService } from './session.service.ts';
import { SessionsRepo } from './sessions.repo.ts';
import { SignInCodesRepo } from './sign-in-codes.repo.ts';
import { SignInService } from './sign-in.service.ts';
import type { MachineTokens } from './tokens.ts';

export interface IdentityArea extends Area {
  readonly sessions: SessionService;
  readonly access: AccessPolicyService;
  readonly signIn: SignInService;
  readonly refusals: Refusals;
  /** The sign-in limits, for the single sign-on area's ways in (one mechanism for every limit). */
  readonly limits: RateLimits;
  /** People the directory and single sign-on manage (the single sign-on area changes them through it). */
  readonly directoryPeople: DirectoryPeople;
}

/**
 * People, sessions, the access policy, sign-in and the first owner's bootstrap; owns `people`
 * (through `people`, built before mail and status read it), `sessions`, `sign_in_codes`,
 * `auth_attempts`, `auth_limits` and the `access` settings document. The access policy ends
 * sessions through the sessions repo and the sessions check the policy: built in that order.
 * Break-glass closes when mail is delivered: identity subscribes to the mail area.
 */
export function createIdentityArea(d: {
  db: Db;
  work: UnitOfWork;
  people: People;
  settings: SettingsStore;
  install: Pick<Install, 'lock'>;
  tokens: MachineTokens;
  cipher: SecretCipher;
  modes: ModeService;
  mail: MailService;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  config: Config;
  /** Whether hand-added people may sign in by code or password (the single sign-on settings' mixed mode). */
  localSignIn(): Promise<boolean>;
  /** The console address the first-start form gives (the single sign-on area's setting). */
  consoleAddress: { save(trx: Trx, url: string | null, at: string): Promise<void> };
}): IdentityArea {
  const { db, work, settings, ledger, clock, log, mail } = d;
  const people = d.people.repo;
  const sessionsRepo = new SessionsRepo(db);
  const access = new AccessPolicyService({ settings, work, people, ledger, clock, sessions: sessionsRepo });
  const sessions = new SessionService({ repo: sessionsRepo, clock, access });
  const limitLocks = new LimitLocksRepo(db);
  const limits = new RateLimits({ repo: new AttemptsRepo(db), locks: limitLocks, clock, work });
  const refusals = new Refusals({ locks: limitLocks, limits, ledger, clock });
  const adminLogin = new AdminLoginService({ breakGlass: () => mail.breakGlass(), sessions, limits, refusals, ledger });
  mail.onDelivered(() => adminLogin.breakGlassClosed());
  const bootstrap = new BootstrapService({
    people,
    install: d.install,
    mail: mail.initial,
    modes: d.modes,
    ledger,
    clock,
    access,
    consoleAddress: d.consoleAddress,
  });
  const signIn = new SignInService({
    people,
    codes: new SignInCodesRepo(db),
    limits,
    refusals,
    sessions,
    access,
    mail,
    ledger,
    clock,
    log,
    codeKey: d.cipher.derive('sign-in-codes'),
    localSignIn: () => d.localSignIn(),
  });
  const peopleService = new PeopleService({ people, sessions, access, ledger, clock });
  return {
    sessions,
    access,
    signIn,
    refusals,
    limits,
    directoryPeople: new DirectoryPeople({ people, sessions, clock }),
    routes: ({ server, log, guard }: Http) => {
      accessRoutes(server, { log, guard, access });
      authRoutes(server, { log, guard, tokens: d.tokens, people, bootstrap, signIn, adminLogin, sessions, client: new ClientAddress(d.config.trustedProxies) });
      peopleRoutes(server, { log, guard, people: peopleService });
    },
  };
}
