/**
 * The episode-search part of `npm run bench:intake`: seeds a realistic history of episodes
 * straight into the service's database (the service keeps running on it), names the 3-term
 * queries the list is searched with, and explains their plans when the list is too slow.
 *
 * Rows are filled the way `host/episodes/episode.repo.ts` fills them (`service_lc`, `note_lc`,
 * `name_lc`, `value_lc` lower-cased, `alert_names` a JSON array, `open_service` only while open).
 * The spread is seeded (mulberry32), so every run gets the same history relative to "now".
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { applyQuery } from '../../host/episodes/query/compile.ts';
import { parseQuery } from '../../host/episodes/query/parse.ts';
import { dialect, openDb, type Db } from '../../host/storage/db.ts';
import { mulberry32 } from '../helpers/random.ts';

const DAY = 86_400_000;
const HISTORY_DAYS = 90;

/** Teams × components: 200 services (`pay-api`, `pay-worker`, … `trading-stream`). */
const TEAMS = [
  'pay',
  'checkout',
  'auth',
  'ledger',
  'search',
  'cards',
  'loans',
  'fx',
  'kyc',
  'fraud',
  'notify',
  'risk',
  'treasury',
  'mobile',
  'web',
  'billing',
  'reports',
  'core',
  'savings',
  'trading',
];
const COMPONENTS = ['api', 'worker', 'db', 'gateway', 'cache', 'queue', 'scheduler', 'proxy', 'batch', 'stream'];
export const SERVICES = TEAMS.flatMap((t) => COMPONENTS.map((c) => `${t}-${c}`));

/** 30 kinds of alert × 10 variants: 300 alert names (`DiskFull`, `DiskFullRoot`, …, `HighLatencyP99`, …). */
const ALERT_BASES = [
  'DiskFull',
  'HighLatency',
  'HighErrorRate',
  'InstanceDown',
  'CPUThrottling',
  'MemoryPressure',
  'PodCrashLooping',
  'CertificateExpiry',
  'ReplicationLag',
  'QueueBacklog',
  'ConnectionPoolExhausted',
  'Http5xx',
  'SlowQueries',
  'DeadlockDetected',
  'NodeNotReady',
  'OOMKilled',
  'TargetDown',
  'KafkaConsumerLag',
  'RedisEvictions',
  'TLSHandshakeErrors',
  'DNSResolutionFailures',
  'BackupFailed',
  'JobFailed',
  'ClockSkew',
  'FileDescriptorsHigh',
  'NetworkPacketLoss',
  'LoadBalancerUnhealthy',
  'SLOBurnRate',
  'ApiQuotaExceeded',
  'ConfigReloadFailed',
];
const ALERT_VARIANTS = ['', 'Root', 'P99', 'Critical', 'Warning', 'Predicted', 'Sustained', 'Spike', 'Regional', 'Canary'];
export const ALERT_NAMES = ALERT_BASES.flatMap((b) => ALERT_VARIANTS.map((v) => b + v));

const ENVS = ['prod', 'prod', 'prod', 'prod', 'prod', 'prod', 'staging', 'staging', 'staging', 'dev'];
const REGIONS = ['eu-west-1', 'eu-central-1', 'us-east-1', 'us-west-2', 'ap-southeast-1'];
const SOURCES = ['alertmanager', 'alertmanager', 'alertmanager', 'grafana', 'datadog'];

/**
 * Realistic 3-term searches, selective in different ways: an exact service (its index), an
 * alert name (a subquery on `episode_alerts`), a common label with a service prefix, a text
 * match on alert names, free text, a rare combination, a wide time window.
 */
export const EPISODE_QUERIES = [
  'service:pay-api outcome:escalated opened<7d',
  'alert:DiskFull kind:incident last:30d',
  'data.env:prod service:pay* duration>5m',
  'alert~latency data.region:eu-west-1 state:closed',
  'disk outcome:mitigated last:14d',
  'kind:notice data.team:fraud opened>30d',
  'service:checkout* alert:InstanceDown* duration<1h',
  'data.region:us-east-1 -outcome:escalated last:90d',
];

export interface SeedResult {
  episodes: number;
  alerts: number;
  data: number;
  open: number;
  seconds: number;
}

/**
 * Seeds `n` episodes (nearly all closed) with 1–3 alerts each and their labels as data, in a
 * few transactions of multi-row inserts, on the database `config` names (the service's own).
 */
export async function seedEpisodes(config: { dataDir: string; databaseUrl: string | null }, n: number, nowMs: number): Promise<SeedResult> {
  const started = Date.now();
  const db = openDb(config);
  try {
    const rnd = mulberry32(0x5eed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    // Skewed: a few services and alert names make most of the noise (u^2 favours low indexes).
    const skewed = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * rnd() * xs.length)]!;
    // Services that already have an open episode (the intake phases made them) must stay unique.
    const taken = new Set(
      ((await db('episodes').select('open_service').whereNotNull('open_service')) as { open_service: string }[]).map((r) => r.open_service),
    );
    const openFree = SERVICES.filter((s) => !taken.has(s)).slice(0, 20);
    const mysql = dialect(db) === 'mysql';
    const episodes: Record<string, unknown>[] = [];
    const alerts: Record<string, unknown>[] = [];
    const data: Record<string, unknown>[] = [];
    const totals = { episodes: 0, alerts: 0, data: 0, open: 0 };
    const one = (i: number) => {
      const id = randomUUID();
      // The open ones are the newest episode of a few services; the rest closed.
      const open = i < openFree.length;
      const service = open ? openFree[i]! : skewed(SERVICES);
      const team = service.slice(0, service.indexOf('-'));
      const env = pick(ENVS);
      const region = pick(REGIONS);
      const tOpen = open ? nowMs - Math.floor(rnd() * 2 * 3_600_000) : nowMs - Math.floor(rnd() * HISTORY_DAYS * DAY);
      // Seconds to days, log-uniform: 10 s … 3 d.
      const duration = Math.round(10_000 * Math.exp(rnd() * Math.log((3 * DAY) / 10_000)));
      const tClose = open ? null : Math.min(tOpen + duration, nowMs - 1000);
      const count = 1 + Math.floor(rnd() * rnd() * 3);
      const severities: string[] = [];
      const names: string[] = [];
      // Labels repeat across an episode's alerts (severity, alertname): each pair once.
      const labels = new Map<string, [string, string]>();
      const label = (key: string, value: string) => labels.set(`${key}\u0000${value}`, [key, value]);
      let note = '';
      for (let a = 0; a < count; a++) {
        const name = skewed(ALERT_NAMES);
        const severity = rnd() < 0.2 ? 'info' : rnd() < 0.3 ? 'critical' : 'warning';
        const instance = `${service}-${Math.floor(rnd() * 12)}.${region}.bank.example:9100`;
        const summary = `${name} on ${instance}`;
        if (a === 0) note = summary;
        const joined = new Date(tOpen + a * 15_000).toISOString();
        const fired = new Date(tOpen - 60_000).toISOString();
        names.push(name);
        severities.push(severity);
        alerts.push({
          episode_id: id,
          fingerprint: `${id.slice(0, 8)}${a}${Math.floor(rnd() * 1e12).toString(16)}`,
          name,
          name_lc: name.toLowerCase(),
          severity,
          source: pick(SOURCES),
          summary,
          joined_at: joined,
          ended_at: open ? null : new Date(tClose!).toISOString(),
          end_status: open ? null : rnd() < 0.9 ? 'resolved' : 'released',
          baseline: JSON.stringify({
            first_seen: fired,
            last_seen: joined,
            firings_7d: Math.floor(rnd() * 20),
            firings_30d: Math.floor(rnd() * 60),
            flapping: rnd() < 0.05,
          }),
        });
        label('alertname', name);
        label('instance', instance);
        label('severity', severity);
      }
      label('service', service);
      label('env', env);
      label('region', region);
      label('team', team);
      for (const [key, value] of labels.values()) data.push({ episode_id: id, key, value, value_lc: value.toLowerCase() });
      totals.data += labels.size;
      episodes.push({
        id,
        kind: severities.some((s) => s !== 'info') ? 'incident' : 'notice',
        state: open ? 'open' : 'closed',
        service,
        service_lc: service.toLowerCase(),
        open_service: open ? service : null,
        alert_names: JSON.stringify([...new Set(names)]),
        t_open: new Date(tOpen).toISOString(),
        t_open_ms: tOpen,
        t_close: tClose === null ? null : new Date(tClose).toISOString(),
        t_close_ms: tClose,
        decision: 'abstain',
        outcome: open || rnd() < 0.7 ? 'escalated' : 'mitigated',
        result: 'none',
        note,
        note_lc: note.toLowerCase(),
      });
      totals.episodes++;
      totals.alerts += count;
      if (open) totals.open++;
    };
    // Several transactions of multi-row inserts, so the running service is never locked out long.
    const PER_TRANSACTION = mysql ? 20_000 : 5000;
    const byKey =
      (...cols: string[]) =>
      (a: Record<string, unknown>, b: Record<string, unknown>) => {
        for (const c of cols) if (a[c] !== b[c]) return String(a[c]) < String(b[c]) ? -1 : 1;
        return 0;
      };
    for (let from = 0; from < n; from += PER_TRANSACTION) {
      for (let i = from; i < Math.min(n, from + PER_TRANSACTION); i++) one(i);
      // In key order, so that each statement fills neighbouring pages of the clustered index.
      episodes.sort(byKey('id'));
      alerts.sort(byKey('episode_id', 'fingerprint'));
      data.sort(byKey('episode_id', 'key', 'value'));
      await db.transaction(async (trx) => {
        // The keys are fresh (random UUIDs); InnoDB may skip its unique checks while loading.
        if (mysql) await trx.raw('SET SESSION unique_checks = 0');
        for (const [table, rows] of [
          ['episodes', episodes],
          ['episode_alerts', alerts],
          ['episode_data', data],
        ] as const) {
          // As many rows per statement as the engine takes (knex inserts on SQLite are a
          // compound SELECT: at most 500 terms).
          const per = mysql ? Math.floor(60_000 / Object.keys(rows[0] ?? { x: 1 }).length) : 500;
          while (rows.length > 0) await trx(table).insert(rows.splice(0, per));
        }
        if (mysql) await trx.raw('SET SESSION unique_checks = 1');
      });
    }
    // Fresh statistics, as a database that grew over months would have them.
    await (mysql ? db.raw('ANALYZE TABLE episodes, episode_alerts, episode_data') : db.raw('ANALYZE'));
    return { ...totals, seconds: Math.round((Date.now() - started) / 100) / 10 };
  } finally {
    await db.destroy();
  }
}

/**
 * The plan of each query as `EpisodeRepo.list` builds it (default page: 50 + 1 rows), from
 * EXPLAIN QUERY PLAN (SQLite) or EXPLAIN (MySQL/MariaDB), with how long it takes in-process.
 */
export async function explainQueries(config: { dataDir: string; databaseUrl: string | null }, queries: readonly string[], nowMs: number): Promise<string[]> {
  const db: Db = openDb(config);
  const out: string[] = [];
  try {
    const mysql = dialect(db) === 'mysql';
    for (const text of queries) {
      const q = db('episodes').select(
        ['id', 'kind', 'state', 'service', 'alert_names', 't_open', 't_open_ms', 't_close', 't_close_ms', 'decision', 'outcome', 'result', 'note'].map(
          (c) => `episodes.${c}`,
        ),
      );
      q.where((w) => void applyQuery(w, parseQuery(text)!, nowMs));
      q.orderBy([
        { column: 'episodes.t_open_ms', order: 'desc' },
        { column: 'episodes.id', order: 'desc' },
      ]).limit(51);
      const { sql, bindings } = q.toSQL();
      const times: number[] = [];
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now();
        await db.raw(sql, bindings as readonly Knex.RawBinding[]);
        times.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      out.push(`${text}   (in-process: median ${times[2]!.toFixed(1)} ms, max ${times[4]!.toFixed(1)} ms)`);
      out.push(`  sql: ${q.toString()}`);
      if (mysql) {
        const [rows] = (await db.raw(`EXPLAIN ${sql}`, bindings as readonly Knex.RawBinding[])) as [Record<string, unknown>[]];
        for (const r of rows)
          out.push(
            `  ${r.id} ${r.select_type} ${r.table} type=${r.type} key=${r.key ?? '-'} key_len=${r.key_len ?? '-'} ref=${r.ref ?? '-'} rows=${r.rows} ${r.Extra ?? ''}`,
          );
      } else {
        const rows = (await db.raw(`EXPLAIN QUERY PLAN ${sql}`, bindings as readonly Knex.RawBinding[])) as { id: number; parent: number; detail: string }[];
        const depth = new Map<number, number>([[0, 0]]);
        for (const r of rows) {
          const d = (depth.get(r.parent) ?? 0) + 1;
          depth.set(r.id, d);
          out.push(`  ${'  '.repeat(d)}${r.detail}`);
        }
      }
    }
    return out;
  } finally {
    await db.destroy();
  }
}
