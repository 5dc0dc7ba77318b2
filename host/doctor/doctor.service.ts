import path from 'node:path';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { InstallRepo } from '../install/install.repo.ts';
import type { ConfirmationView } from '../licence/licence-check.ts';
import type { ServiceUsage } from '../licence/licence-limits.ts';
import type { LicenceStatus } from '../licence/licence.ts';
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

export type ComponentName = 'database' | 'ledger' | 'plugins' | 'connectors' | 'mail' | 'licence' | 'schedules' | 'notifications';

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
   * ledger, plugins, connectors, mail, licence, schedules, notifications; the CLI the ones it can see alone.
   */
  components: DoctorComponent[];
}

/** What doctor reads of the connectors (ConnectorService.list() fits as it is). */
export interface ConnectorsSeen {
  connectors: ReadonlyArray<{ name: string; kind: string; state: 'ok' | 'problem' | 'unchecked'; last_problem: string | null; last_checked_at: string | null }>;
  file: { path: string; problem: string | null } | null;
}

/** What doctor reads of the licence: where it stands, its confirmation, and services against its limit. */
export interface LicenceSeen {
  status: LicenceStatus;
  confirmation: ConfirmationView | null;
  usage: ServiceUsage | null;
  /** Services beyond the licence's limit (alerts taken in, left out of autonomy). */
  overLimit: ReadonlyArray<{ service: string }>;
}

/** What doctor reads of notification delivery (NotifyDelivery.status() fits as it is). */
export interface NotificationsSeen {
  recipients: readonly string[];
  targets: readonly string[];
  pending: number;
  problems: ReadonlyArray<{ channel_kind: 'email' | 'target'; name: string; problem: string; at: string }>;
  /** Why e-mail cannot be sent at all (no mail provider), or null: recipients would then never be told. */
  mailProblem?: string | null;
}

/** The background tick of this host process. */
export interface TickSeen {
  last_run_at: string | null;
  last_error: string | null;
  every_ms: number;
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
  mail?(): Promise<{ open: boolean; reason: string | null }>;
  licence?(): Promise<LicenceSeen>;
  schedules?(): Promise<TickSeen>;
  /** Who is told of incidents, and recipients or targets whose last delivery failed. */
  notifications?(): Promise<NotificationsSeen>;
}

/** What only the running service can add to doctor; the CLI reports the components it can see alone. */
export type DoctorExtras = Pick<DoctorDeps, 'connectors' | 'mail' | 'licence' | 'schedules' | 'notifications'>;

/** The usual deps on one database: both the host and the CLI build theirs with this. */
export function doctorDeps(opts: {
  db: Db;
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'adminToken' | 'ingestToken'>;
  installs: InstallRepo;
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

/** Why a chain failed verification, in words. */
const LEDGER_PROBLEMS: Record<VerifyProblem, string> = {
  seq_gap: 'an event is missing from the chain',
  prev_hash_mismatch: 'an event does not link to the one before it',
  hash_mismatch: 'an event was changed after it was written',
  head_mismatch: 'the stored chain head does not match the last event',
  checkpoint_mismatch: 'the chain no longer matches a signed checkpoint',
  truncated: 'events a signed checkpoint (or the expected seq) vouches for are missing',
  checkpoint_invalid: 'a checkpoint is not signed by this install or its file has unreadable lines',
  checkpoint_missing: 'signed checkpoints the service writes are missing (removed from the database and the checkpoint file)',
  expected_hash_mismatch: 'the entry at the expected seq no longer has the expected hash',
};

/** One line about a verify report, shared by doctor and `oncall ledger-verify`. */
export function describeLedger(r: VerifyReport): string {
  if (r.ok) {
    const cp = r.checkpoint === null ? 'no signed checkpoint yet' : `matches the signed checkpoint at seq ${r.checkpoint.seq} (${r.checkpoint.at})`;
    return `chain verified: ${r.checked} events, head seq ${r.head.seq}; ${cp}`;
  }
  const why = r.problem === null ? 'unknown problem' : `${LEDGER_PROBLEMS[r.problem]} (${r.problem})`;
  if (r.problem === 'checkpoint_missing' && r.range !== null) {
    return `no signed checkpoint in seqs ${r.range.from_seq} to ${r.range.to_seq}: ${why}; a rewrite there would go unseen, so check the chain against a head kept elsewhere (docs/ledger.md)`;
  }
  // A self-consistent chain that disagrees at one seq was rewritten somewhere up to that seq,
  // after the last checkpoint it still matches; the entries before it hash correctly, which
  // says nothing about whether they are the original ones.
  if (r.problem === 'checkpoint_mismatch' || r.problem === 'expected_hash_mismatch') {
    return `chain rewritten between seq ${r.first_bad_seq} and seq ${r.checked + 1}: ${why}`;
  }
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
  return { ok: checks.every((c) => c.ok) && components.every((c) => c.status !== 'fail'), checked_at: checkedAt, judged_by: deps.judge, judged, checks, components };
}

type Part = Omit<DoctorComponent, 'name'>;
const part = (status: CheckLevel, detail: string, fix: string | null = null): Part => ({ status, detail, fix: status === 'ok' ? null : fix });

async function attemptPart(fn: () => Promise<Part>, what: string, fix: string): Promise<Part> {
  try {
    return await fn();
  } catch (e) {
    return part('fail', `${what}: ${e instanceof Error ? e.message : String(e)}`, fix);
  }
}

/** Components of the report: the first checks seen as parts, then what the running service adds. */
async function runComponents(deps: DoctorDeps, first: { database: Finding; ledger: Finding; plugins: Finding }): Promise<DoctorComponent[]> {
  const out: DoctorComponent[] = [
    { name: 'database', ...part(first.database.level, first.database.detail, 'check SERVICE_DATABASE_URL (or SERVICE_DATA_DIR for SQLite) and that the database server is running') },
    { name: 'ledger', ...part(first.ledger.level, first.ledger.detail, 'run `oncall ledger-verify` and restore the ledger from a backup taken before the first bad seq (docs/ledger.md)') },
    { name: 'plugins', ...part(first.plugins.level, first.plugins.detail, 'fix or remove the broken plugin folder named above and restart; the others still load') },
  ];
  if (deps.connectors !== undefined) {
    const read = deps.connectors;
    out.push({ name: 'connectors', ...(await attemptPart(async () => describeConnectors(await read()), 'cannot list the connectors', 'check the database, then GET /v1/connectors')) });
  }
  if (deps.mail !== undefined) {
    const read = deps.mail;
    out.push({ name: 'mail', ...(await attemptPart(async () => describeMail(await read()), 'cannot read the mail state', 'check the database, then GET /v1/settings/mail')) });
  }
  if (deps.licence !== undefined) {
    const read = deps.licence;
    out.push({ name: 'licence', ...(await attemptPart(async () => describeLicence(await read()), 'cannot read the licence', 'check the database, then GET /v1/status')) });
  }
  if (deps.schedules !== undefined) {
    const read = deps.schedules;
    const now = deps.clock.now().getTime();
    out.push({ name: 'schedules', ...(await attemptPart(async () => describeTick(await read(), now), 'cannot read the schedules', 'restart the service')) });
  }
  if (deps.notifications !== undefined) {
    const read = deps.notifications;
    out.push({ name: 'notifications', ...(await attemptPart(async () => describeNotifications(await read()), 'cannot read the notification state', 'check the database, then GET /v1/notifications')) });
  }
  return out;
}

function describeConnectors(seen: ConnectorsSeen): Part {
  const fileProblem = seen.file?.problem ?? null;
  if (fileProblem !== null) return part('fail', `connectors.json (${seen.file!.path}): ${fileProblem}`, 'correct connectors.json in SERVICE_CONFIG_DIR and restart');
  if (seen.connectors.length === 0) return part('warn', 'no connectors configured: nothing can be investigated', 'add one in the console or with PUT /v1/connectors/{name} (docs/connectors.md)');
  const bad = seen.connectors.filter((c) => c.state === 'problem');
  const unchecked = seen.connectors.filter((c) => c.state === 'unchecked');
  const counts = `${plural(seen.connectors.length, 'connector')}: ${seen.connectors.length - bad.length - unchecked.length} ok, ${bad.length} with a problem, ${unchecked.length} unchecked`;
  if (bad.length > 0) {
    return part('fail', `${counts}; ${bad.map((c) => `${c.name} (${c.kind}): ${c.last_problem ?? 'problem'}`).join('; ')}`, `fix the settings or the system they reach, then POST /v1/connectors/{name}/check (or \`oncall connectors check <name>\`)`);
  }
  if (unchecked.length > 0) return part('warn', `${counts}; not checked yet: ${unchecked.map((c) => c.name).join(', ')}`, 'check them: POST /v1/connectors/{name}/check (or `oncall connectors check <name>`)');
  return part('ok', counts);
}

function describeNotifications(seen: NotificationsSeen): Part {
  const who = `${plural(seen.recipients.length, 'on-call recipient')}, ${plural(seen.targets.length, 'notification target')}`;
  if (seen.recipients.length === 0 && seen.targets.length === 0) {
    return part('warn', 'no on-call recipients are configured: nobody is told when an incident opens', 'set them: PUT /v1/settings/notifications or the Settings page (docs/notifications.md)');
  }
  if (seen.problems.length > 0) {
    const list = seen.problems.map((p) => `${p.channel_kind === 'email' ? p.name : `target ${p.name}`}: ${p.problem} (${p.at})`).join('; ');
    return part('fail', `${who}; the last delivery failed for ${list}`, 'fix the mail settings or the target (GET /v1/connectors/{name}); failed messages are retried for an hour (docs/notifications.md)');
  }
  if (seen.recipients.length > 0 && seen.mailProblem) {
    return part('warn', `${who}; the recipients cannot be e-mailed: ${seen.mailProblem}`, 'configure mail: PUT /v1/settings/mail, then POST /v1/settings/mail/test (docs/mail.md)');
  }
  const recipientsOnly = seen.recipients.length === 0 ? part('warn', `${who}: nobody is told by e-mail`, 'add on-call recipients: PUT /v1/settings/notifications') : null;
  return recipientsOnly ?? part('ok', `${who}; ${seen.pending} message(s) waiting`);
}

function describeMail(glass: { open: boolean; reason: string | null }): Part {
  if (!glass.open) return part('ok', 'sign-in codes can be sent; break-glass is closed');
  return part('warn', `break-glass is open (the admin token can sign in): ${glass.reason ?? 'codes cannot be sent'}`, 'configure a mail provider and send a test: PUT /v1/settings/mail, POST /v1/settings/mail/test (docs/mail.md)');
}

function describeLicence(seen: LicenceSeen): Part {
  const s = seen.status;
  const c = seen.confirmation;
  const who = s.customer === null ? '' : ` (${s.customer}, ${s.tier ?? 'unknown tier'}, expires ${s.expires_at})`;
  const usage = seen.usage === null ? '' : `; ${seen.usage.services_used} of ${seen.usage.services_allowed ?? 'unlimited'} services`;
  let confirm = '';
  if (c !== null) {
    if (c.mode === 'offline') confirm = '; confirmation off (SERVICE_LICENCE_CHECK=offline)';
    else if (c.server === null) confirm = '; not confirmed online: SERVICE_LICENCE_SERVER is unset';
    else if (c.applies) confirm = `; confirmation ${c.mode}: last confirmed ${c.last_confirmed_at ?? 'never'}${c.last_result === null || c.last_result === 'valid' ? '' : `, last attempt ${c.last_result}${c.last_problem === null ? '' : ` (${c.last_problem})`}`}${c.lapses_at === null ? '' : `, unconfirmed it stops counting at ${c.lapses_at}`}`;
  }
  const detail = `licence ${s.state}${who}${usage}${confirm}`;
  switch (s.state) {
    case 'none':
      return part('warn', detail, 'install a licence (POST /v1/licence) or start the 30-day trial (POST /v1/licence/redeem)');
    case 'invalid':
      return part('fail', detail, 'the licence does not verify: install the one the vendor sent, unedited (`oncall licence-verify <file>` checks it)');
    case 'expired':
      return part('fail', detail, 'install a renewed licence (POST /v1/licence)');
    case 'revoked':
      return part('fail', detail, 'the vendor revoked this licence: contact the vendor and install a new one');
    case 'unconfirmed':
      return part('fail', detail, `the licence server could not confirm the licence within its grace: let the service reach ${c?.server ?? 'SERVICE_LICENCE_SERVER'}, or set SERVICE_LICENCE_CHECK=auto`);
    case 'grace':
      return part('warn', detail, 'the licence has expired and runs on its grace days: install a renewed licence');
  }
  if (seen.overLimit.length > 0) {
    const names = seen.overLimit.slice(0, 10).map((o) => o.service).join(', ');
    return part('warn', `${detail}; ${plural(seen.overLimit.length, 'service')} beyond the licence (alerts taken in, left out of autonomy): ${names}${seen.overLimit.length > 10 ? ', …' : ''}`, 'a licence with more services lifts the limit (contact the vendor)');
  }
  if (c !== null && c.applies && (c.last_result === 'unreachable' || c.last_result === 'error')) {
    return part('warn', detail, `let the service reach ${c.server} (outbound HTTPS); it retries every 6 hours`);
  }
  return part('ok', detail);
}

function describeTick(tick: TickSeen, nowMs: number): Part {
  if (tick.last_error !== null) return part('fail', `the last background tick failed: ${tick.last_error}`, 'read the service log for "tick failed"; the tick retries on its own');
  if (tick.last_run_at === null) return part('warn', 'the background tick has not run yet in this process', `it runs every ${tick.every_ms / 1000} s once the service listens`);
  const age = nowMs - Date.parse(tick.last_run_at);
  if (age > 6 * tick.every_ms) return part('fail', `the background tick last ran at ${tick.last_run_at} (${Math.round(age / 1000)} s ago)`, 'the tick is stalled: read the service log and restart the service');
  return part('ok', `the background tick last ran at ${tick.last_run_at}`);
}
