/**
 * Doctor: the first checks (database, migrations, plugins, ledger, tokens) run here, in order,
 * because each depends on the one before (an unreachable database skips the rest); the
 * components only the running service can see are judged one per file in components/, listed
 * in components/table.ts.
 */
import path from 'node:path';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Install } from '../install/install.ts';
import type { VerifyReport } from '../ledger/verify.ts';
import type { Db } from '../storage/db.ts';
import { pendingMigrations } from '../storage/migrate.ts';
import type { AutonomySeen } from './components/autonomy.ts';
import type { DigestSeen } from './components/digest.ts';
import type { KeychainSeen } from './components/keychain.ts';
import type { LeasesSeen } from './components/leases.ts';
import type { WitnessSeen } from './components/witness.ts';
import type { ConnectorsSeen } from './components/connectors.ts';
import type { LicenceSeen } from './components/licence.ts';
import type { MailSeen } from './components/mail.ts';
import type { NotificationsSeen } from './components/notifications.ts';
import type { TickSeen } from './components/schedules.ts';
import { EXTRA_COMPONENTS } from './components/table.ts';
import { describeLedger } from './ledger-words.ts';
import { part, plural } from './part.ts';

// Where the rest of the host and the CLI have always found them.
export type { AutonomySeen, ConnectorsSeen, KeychainSeen, LeasesSeen, LicenceSeen, MailSeen, NotificationsSeen, TickSeen, WitnessSeen };
export { describeLedger };

export type CheckLevel = 'ok' | 'warn' | 'fail';
export type CheckName = 'database' | 'migrations' | 'plugins' | 'ledger' | 'tokens';

/** One finding; `ok` is false only on `fail` (a warning is worth reading, not an outage). */
export interface DoctorCheck {
  name: CheckName;
  ok: boolean;
  level: CheckLevel;
  /** Plain words a person can act on; never a secret. */
  detail: string;
}

export type ComponentName =
  | 'database'
  | 'ledger'
  | 'plugins'
  | 'connectors'
  | 'mail'
  | 'licence'
  | 'schedules'
  | 'notifications'
  | 'autonomy'
  | 'digest'
  | 'keychain'
  | 'witness'
  | 'leases';

/** One part of the install as an operator sees it: how it is and, unless fine, what to do. */
export interface DoctorComponent {
  name: ComponentName;
  status: CheckLevel;
  detail: string;
  /** What to do about it; null when nothing is needed. */
  fix: string | null;
}

/**
 * Whose view a report gives: the running service judges its own environment (its tokens, the
 * plugins it loaded); `oncall doctor` run on its own judges the CLI process's environment, which
 * may differ from the service's (another shell, another unit file).
 */
export type DoctorJudge = 'service' | 'cli';

export interface DoctorReport {
  ok: boolean;
  checked_at: string;
  /** Which process's environment the report judges. */
  judged_by: DoctorJudge;
  /** The same in words, for people: which process and what it read. */
  judged: string;
  checks: DoctorCheck[];
  /**
   * Every component with a status and a fix hint. The running service reports all of database,
   * ledger, plugins, connectors, mail, licence, schedules, notifications, autonomy, digest, keychain, witness, leases; the CLI the ones it can see alone.
   */
  components: DoctorComponent[];
}

/** What doctor needs of the plugin registry (the loader's PluginRegistry fits as it is). */
export interface PluginsSeen {
  loaded: ReadonlyArray<unknown>;
  /** Each `problem` already names the plugin (or its folder) and what is wrong. */
  broken: ReadonlyArray<{ problem: string }>;
}

/**
 * Everything doctor looks at, as data and functions, so the HTTP route (the running host's own
 * services) and the CLI (opened straight on the database) run the same checks.
 */
export interface DoctorDeps {
  clock: Clock;
  /** Which process runs the checks, so that each finding says whose environment it judged. */
  judge: DoctorJudge;
  /** Where the database is, for people (never with a password). */
  databaseLabel: string;
  /** A trivial query; throws when the database cannot be reached. */
  ping(): Promise<void>;
  pendingMigrations(): Promise<number>;
  plugins(): Promise<PluginsSeen>;
  verifyLedger(): Promise<VerifyReport>;
  adminTokenFromEnv: boolean;
  /** Whether the install row holds the hash of a generated admin token. */
  adminTokenStored(): Promise<boolean>;
  ingestEnabled: boolean;
  /** The running service adds these; the CLI reports only what it can see alone. */
  connectors?(): Promise<ConnectorsSeen>;
  /** The mail service's break-glass state (open: codes cannot be sent). */
  mail?(): Promise<MailSeen>;
  licence?(): Promise<LicenceSeen>;
  schedules?(): Promise<TickSeen>;
  /** Who is told of incidents, and recipients or targets whose last delivery failed. */
  notifications?(): Promise<NotificationsSeen>;
  /** autonomy.json as this process reads it, and the file in force. */
  autonomy?(): Promise<AutonomySeen>;
  /** The last daily digest e-mail and when the next is due. */
  digest?(): Promise<DigestSeen>;
  /** This install's place in its keychain (null: the licence has none). */
  keychain?(): Promise<KeychainSeen>;
  /** How each configured ledger witness fares (this host's sends). */
  witness?(): Promise<WitnessSeen>;
  /** The leases live now, with their holders (`<host>:<pid>:<kind>:…`). */
  leases?(): Promise<LeasesSeen>;
}

/** What only the running service can add to doctor; the CLI reports the components it can see alone. */
export type DoctorExtras = Pick<
  DoctorDeps,
  'connectors' | 'mail' | 'licence' | 'schedules' | 'notifications' | 'autonomy' | 'digest' | 'keychain' | 'witness' | 'leases'
>;

/** The usual deps on one database: both the host and the CLI build theirs with this. */
export function doctorDeps(opts: {
  db: Db;
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'adminToken' | 'ingestToken'>;
  installs: Pick<Install, 'get'>;
  clock: Clock;
  plugins: () => Promise<PluginsSeen>;
  verifyLedger: () => Promise<VerifyReport>;
  extras?: DoctorExtras;
  judge: DoctorJudge;
}): DoctorDeps {
  const { db, config, installs } = opts;
  return {
    clock: opts.clock,
    judge: opts.judge,
    databaseLabel: databaseLabel(config),
    ping: async () => {
      await db.raw('select 1');
    },
    pendingMigrations: () => pendingMigrations(db),
    plugins: opts.plugins,
    verifyLedger: opts.verifyLedger,
    adminTokenFromEnv: config.adminToken !== null,
    adminTokenStored: async () => (await installs.get())?.admin_token_hash != null,
    ingestEnabled: config.ingestToken !== null,
    ...opts.extras,
  };
}

/** `MySQL host:port/db` or `SQLite <file>`: enough to find it, nothing to log in with. */
export function databaseLabel(config: Pick<Config, 'databaseUrl' | 'dataDir'>): string {
  if (config.databaseUrl === null) return `SQLite ${path.join(config.dataDir, 'service.db')}`;
  try {
    const url = new URL(config.databaseUrl.replace(/^mysql2:/, 'mysql:'));
    return `MySQL ${url.hostname}:${url.port === '' ? 3306 : url.port}${url.pathname}`;
  } catch {
    return 'MySQL (SERVICE_DATABASE_URL)';
  }
}

type Finding = Omit<DoctorCheck, 'name' | 'ok'>;
const ok = (detail: string): Finding => ({ level: 'ok', detail });
const fail = (detail: string): Finding => ({ level: 'fail', detail });

/** A check that throws is a failed check naming what went wrong, never a failed doctor. */
async function attempt(fn: () => Promise<Finding>, what: string): Promise<Finding> {
  try {
    return await fn();
  } catch (e) {
    return fail(`${what}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Runs the first checks: database, migrations, plugins, ledger, tokens. */
export async function runDoctor(deps: DoctorDeps): Promise<DoctorReport> {
  const checkedAt = deps.clock.now().toISOString();
  const database = await attempt(async () => {
    await deps.ping();
    return ok(`reachable (${deps.databaseLabel})`);
  }, `cannot reach the database (${deps.databaseLabel}); check SERVICE_DATABASE_URL and that the server is running`);
  const reachable = database.level !== 'fail';
  const unreachable = fail('not checked: the database is unreachable');

  const migrations = !reachable
    ? unreachable
    : await attempt(async () => {
        const n = await deps.pendingMigrations();
        return n === 0 ? ok('schema is current') : fail(`${plural(n, 'migration')} pending: start the service once (npm start) to apply them`);
      }, 'cannot read the migration table');

  const plugins = await attempt(async () => {
    const seen = await deps.plugins();
    const loaded = `${plural(seen.loaded.length, 'plugin')} loaded`;
    if (seen.broken.length === 0) return ok(loaded);
    return fail(`${loaded}; ${plural(seen.broken.length, 'broken plugin')} skipped: ${seen.broken.map((b) => b.problem).join('; ')}`);
  }, 'cannot load plugins');

  const ledger = !reachable
    ? unreachable
    : await attempt(async () => {
        const report = await deps.verifyLedger();
        return report.ok ? ok(describeLedger(report)) : fail(`${describeLedger(report)}; see docs/cli.md (ledger-verify)`);
      }, 'cannot verify the ledger');

  const tokens = await attempt(async () => {
    const cli = deps.judge === 'cli';
    const whose = cli ? "this CLI process's environment (not the running service's)" : "the running service's environment";
    const ingest = deps.ingestEnabled
      ? 'ingest token set by SERVICE_INGEST_TOKEN'
      : cli
        ? 'SERVICE_INGEST_TOKEN is unset here; ingest is disabled only if the service lacks it too (ask the service: `oncall doctor` without --local, or GET /v1/doctor)'
        : 'ingest disabled: the service has no SERVICE_INGEST_TOKEN, so POST /v1/events and the alert webhooks answer 403 ingest_disabled; set it and restart';
    let admin: Finding;
    if (deps.adminTokenFromEnv) admin = ok('admin token set by SERVICE_ADMIN_TOKEN');
    else if (!reachable) admin = fail('admin token not checked: SERVICE_ADMIN_TOKEN is unset and the database is unreachable');
    else if (await deps.adminTokenStored()) admin = ok('admin token generated at first start (only its hash is stored)');
    else admin = fail('no admin token: set SERVICE_ADMIN_TOKEN or start the service once to generate one');
    const level: CheckLevel = admin.level === 'fail' ? 'fail' : deps.ingestEnabled ? 'ok' : 'warn';
    return { level, detail: `judged by ${whose}: ${admin.detail}; ${ingest}` };
  }, 'cannot check the tokens');

  const findings: Array<[CheckName, Finding]> = [
    ['database', database],
    ['migrations', migrations],
    ['plugins', plugins],
    ['ledger', ledger],
    ['tokens', tokens],
  ];
  const checks = findings.map(([name, f]) => ({ name, ok: f.level !== 'fail', level: f.level, detail: f.detail }));
  const components = await runComponents(deps, { database, ledger, plugins });
  const judged =
    deps.judge === 'service'
      ? `the running service (process ${process.pid}): its own SERVICE_* environment, the plugins it loaded at start, its database`
      : `this CLI process (process ${process.pid}): its own SERVICE_* environment, plugins loaded afresh, the database it names; the running service may see other values`;
  return {
    ok: checks.every((c) => c.ok) && components.every((c) => c.status !== 'fail'),
    checked_at: checkedAt,
    judged_by: deps.judge,
    judged,
    checks,
    components,
  };
}

/** Components of the report: the first checks seen as parts, then what the running service adds. */
async function runComponents(deps: DoctorDeps, first: { database: Finding; ledger: Finding; plugins: Finding }): Promise<DoctorComponent[]> {
  const out: DoctorComponent[] = [
    {
      name: 'database',
      ...part(
        first.database.level,
        first.database.detail,
        'check SERVICE_DATABASE_URL (or SERVICE_DATA_DIR for SQLite) and that the database server is running',
      ),
    },
    {
      name: 'ledger',
      ...part(
        first.ledger.level,
        first.ledger.detail,
        'run `oncall ledger-verify` and restore the ledger from a backup taken before the first bad seq (docs/ledger.md)',
      ),
    },
    {
      name: 'plugins',
      ...part(first.plugins.level, first.plugins.detail, 'fix or remove the broken plugin folder named above and restart; the others still load'),
    },
  ];
  const now = deps.clock.now().getTime();
  for (const c of EXTRA_COMPONENTS) {
    const checked = c.check(deps, now);
    if (checked !== null) out.push({ name: c.name, ...(await checked) });
  }
  return out;
}
