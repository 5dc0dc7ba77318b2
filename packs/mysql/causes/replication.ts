import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { MYSQL } from '../applies.ts';

const ID = 'mysql/replication';
/** How far back a failing scrape of the replica status counts. */
const UNREADABLE_WINDOW = '2m';

/**
 * `mysql/replication`: a replica's replication is stopped (its IO or SQL thread not running,
 * `mysql_slave_status_slave_io_running` / `_sql_running` 0) or it is `max_lag_s` or more behind
 * (`mysql_slave_status_seconds_behind_master`), at the check's moment. A server its exporter
 * reads (`mysql_up`) with no slave-status series is no replica: ruled out, unless the
 * exporter's slave_status collector failed there (the account lacks the grant): unknown.
 */
export const replication: CauseDefinition = {
  id: ID,
  title: 'MySQL replication stopped or lagging',
  specificity: 65,
  applies: MYSQL,
  reads: ['metrics'],
  settings: { max_lag_s: 300 },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { describedAll, evidenceOf, listed, num, overAll, place, rounded, seriesName } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const maxLag = set.number('max_lag_s', 0);
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;
    const where = describedAll(p);
    const up = await ctx.metrics.query(overAll(p, (s) => `mysql_up{${s}}`));
    if (up.samples.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `no mysql_up series for ${where}: link the targets of its prometheus-mysqld-exporter`,
      };
    const io = await ctx.metrics.query(overAll(p, (s) => `min by (instance) (mysql_slave_status_slave_io_running{${s}})`));
    const sqlT = await ctx.metrics.query(overAll(p, (s) => `min by (instance) (mysql_slave_status_slave_sql_running{${s}})`));
    const lag = await ctx.metrics.query(overAll(p, (s) => `max by (instance) (mysql_slave_status_seconds_behind_master{${s}})`));
    const key = (m: Record<string, string>) => m.instance ?? seriesName(m);
    const replicas = [...new Set([...io.samples, ...sqlT.samples].map((s) => key(s.metric)))];
    const ioBy = new Map(io.samples.map((s) => [key(s.metric), num(s.value)]));
    const sqlBy = new Map(sqlT.samples.map((s) => [key(s.metric), num(s.value)]));
    const lagBy = new Map(lag.samples.map((s) => [key(s.metric), num(s.value)]));
    const rows = replicas.map((r) => ({ name: r, io: ioBy.get(r), sql: sqlBy.get(r), lag: lagBy.get(r) }));
    const observed = {
      max_lag_s: maxLag,
      replicas: rows
        .slice(0, 20)
        .map((r) => ({ instance: r.name, io_running: r.io ?? null, sql_running: r.sql ?? null, seconds_behind: r.lag === undefined ? null : rounded(r.lag) })),
    };
    // Each of the three reads that decide is evidence of its own: a stopped SQL thread is shown by its query, not the IO thread's.
    const evidence = [
      evidenceOf(io, 'metric', observed, `Replication threads and lag of ${rows.length} replica(s); the IO thread running (1) or not (0).`),
      evidenceOf(
        sqlT,
        'metric',
        { replicas: observed.replicas.map((r) => ({ instance: r.instance, sql_running: r.sql_running })) },
        'The SQL thread running (1) or not (0), per replica.',
      ),
      evidenceOf(lag, 'metric', { max_lag_s: maxLag }, 'Seconds behind the primary, per replica.'),
    ];
    const stopped = rows.filter((r) => r.io === 0 || r.sql === 0);
    const behind = rows.filter((r) => !stopped.includes(r) && r.lag !== undefined && r.lag >= maxLag);
    const stoppedText = (r: (typeof rows)[number]) =>
      `${r.name} (${[r.io === 0 ? 'IO thread stopped' : null, r.sql === 0 ? 'SQL thread stopped' : null].filter((x) => x !== null).join(', ')})`;
    if (stopped.length > 0 || behind.length > 0)
      return {
        verdict: 'holds',
        reason: [
          stopped.length > 0 ? `replication stopped on ${listed(stopped.map(stoppedText))}` : null,
          behind.length > 0 ? `${listed(behind.map((r) => `${r.name} ${Math.round(r.lag!)} s`))} behind the primary (at least ${maxLag} s)` : null,
        ]
          .filter((x) => x !== null)
          .join('; '),
        evidence,
        subjects: [...stopped, ...behind].map((r) => r.name),
        verification: { cause: ID, expect: 'ruled_out', after_s: 120 },
      };
    // No slave status series is no replica only when the exporter could read the status: without
    // the grant (SLAVE MONITOR on MariaDB 10.5.9 and later) its slave_status collector fails at
    // every scrape and a broken replica looks like a primary.
    const failing = await ctx.metrics.query(
      overAll(p, (s) => `increase(mysql_exporter_scrape_errors_total{collector="collect.slave_status",${s}}[${UNREADABLE_WINDOW}]) > 0`),
    );
    const unreadable = [...new Set(failing.samples.map((s) => key(s.metric)))].filter((i) => !replicas.includes(i));
    if (unreadable.length > 0)
      return {
        verdict: 'unknown',
        obstacle: 'the read was refused or failed',
        reason: `the exporter of ${listed(unreadable)} cannot read the replica status (its slave_status collector failed in the last ${UNREADABLE_WINDOW}): grant the monitoring account SLAVE MONITOR (MariaDB 10.5.9 and later) or REPLICATION CLIENT (MySQL)`,
        evidence: [...evidence, evidenceOf(failing, 'metric', { unreadable }, `The slave_status collector failed on ${listed(unreadable)}.`)],
      };
    if (rows.length === 0) return { verdict: 'ruled_out', reason: `no server of ${where} is a replica (no slave status series)`, evidence };
    return { verdict: 'ruled_out', reason: `every replica of ${where} replicates, less than ${maxLag} s behind`, evidence };
  },
};
