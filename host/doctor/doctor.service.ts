import path from 'node:path';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { InstallRepo } from '../install/install.repo.ts';
import type { VerifyProblem, VerifyReport } from '../ledger/verify.ts';
import type { Db } from '../storage/db.ts';
import { pendingMigrations } from '../storage/migrate.ts';

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

export interface DoctorReport {
  ok: boolean;
  checked_at: string;
  checks: DoctorCheck[];
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
}

/** The usual deps on one database: both the host and the CLI build theirs with this. */
export function doctorDeps(opts: {
  db: Db;
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'adminToken' | 'ingestToken'>;
  installs: InstallRepo;
  clock: Clock;
  plugins: () => Promise<PluginsSeen>;
  verifyLedger: () => Promise<VerifyReport>;
}): DoctorDeps {
  const { db, config, installs } = opts;
  return {
    clock: opts.clock,
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

/** Why a chain failed verification, in words. */
const LEDGER_PROBLEMS: Record<VerifyProblem, string> = {
  seq_gap: 'an event is missing from the chain',
  prev_hash_mismatch: 'an event does not link to the one before it',
  hash_mismatch: 'an event was changed after it was written',
  head_mismatch: 'the stored chain head does not match the last event',
  checkpoint_mismatch: 'the chain no longer matches a signed checkpoint',
  truncated: 'events a signed checkpoint vouches for are missing',
  checkpoint_invalid: 'a checkpoint is not signed by this install or its file has unreadable lines',
};

/** One line about a verify report, shared by doctor and `oncall ledger-verify`. */
export function describeLedger(r: VerifyReport): string {
  if (r.ok) {
    const cp = r.checkpoint === null ? 'no signed checkpoint yet' : `matches the signed checkpoint at seq ${r.checkpoint.seq} (${r.checkpoint.at})`;
    return `chain verified: ${r.checked} events, head seq ${r.head.seq}; ${cp}`;
  }
  const why = r.problem === null ? 'unknown problem' : `${LEDGER_PROBLEMS[r.problem]} (${r.problem})`;
  return `chain broken at seq ${r.first_bad_seq}: ${why}; ${r.checked} events before it are intact`;
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

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

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
    const ingest = deps.ingestEnabled ? 'ingest token set by SERVICE_INGEST_TOKEN' : 'ingest disabled: set SERVICE_INGEST_TOKEN';
    let admin: Finding;
    if (deps.adminTokenFromEnv) admin = ok('admin token set by SERVICE_ADMIN_TOKEN');
    else if (!reachable) admin = fail('admin token not checked: SERVICE_ADMIN_TOKEN is unset and the database is unreachable');
    else if (await deps.adminTokenStored()) admin = ok('admin token generated at first start (only its hash is stored)');
    else admin = fail('no admin token: set SERVICE_ADMIN_TOKEN or start the service once to generate one');
    const level: CheckLevel = admin.level === 'fail' ? 'fail' : deps.ingestEnabled ? 'ok' : 'warn';
    return { level, detail: `${admin.detail}; ${ingest}` };
  }, 'cannot check the tokens');

  const findings: Array<[CheckName, Finding]> = [
    ['database', database],
    ['migrations', migrations],
    ['plugins', plugins],
    ['ledger', ledger],
    ['tokens', tokens],
  ];
  const checks = findings.map(([name, f]) => ({ name, ok: f.level !== 'fail', level: f.level, detail: f.detail }));
  return { ok: checks.every((c) => c.ok), checked_at: checkedAt, checks };
}
