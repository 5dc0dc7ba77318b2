import type { CheckAnswer, CheckContext, ConnectionsCheck, CounterCheck, CounterRow, MetricSample, Placement, UpCheck } from '../../contract.ts';
import { describedAll, overAll, place } from './place.ts';
import { num, percent, rounded } from './promql.ts';
import { evidenceOf, listed, samplesObserved, seriesName } from './series.ts';
import { Settings } from './settings.ts';
import { alertWindow } from './window.ts';

// Whole checks that several packs' causes share (plugin API 1.7): a cause whose logic is one of
// these declares what differs (its id, metric, words) and hands its context over. Each reads
// through the cause's own `ctx.metrics`, so what the cause `reads` still bounds it.

/** Where a series is, as a subject: its `instance`, else its labels. */
const instanceOf = (metric: Record<string, string>): string => metric.instance ?? seriesName(metric);

/** Settings that cannot be used, or a service that cannot be placed: the unknown answer, else where the series are. */
async function placed(ctx: CheckContext, set: Settings | null): Promise<{ ok: true; p: Placement; where: string } | { ok: false; answer: CheckAnswer }> {
  const bad = set?.problem() ?? null;
  if (bad !== null) return { ok: false, answer: { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad } };
  const pl = await place(ctx);
  if (!pl.ok) return { ok: false, answer: { verdict: 'unknown', obstacle: pl.obstacle, reason: pl.reason } };
  return { ok: true, p: pl.placement, where: describedAll(pl.placement) };
}

/** The unknown answer when a query of the exporter's series answers nothing. */
const noSeries = (series: string, where: string, exporter: string): CheckAnswer => ({
  verdict: 'unknown',
  obstacle: "the data isn't there",
  reason: `no ${series} series for ${where}: link the targets of its ${exporter}`,
});

/**
 * An exporter that runs but cannot reach its server (`<metric> == 0`) at the check's moment
 * (`mysql/down`, `postgres/down`, `redis/down`). One query, the evidence.
 */
export async function upCheck(ctx: CheckContext, c: UpCheck): Promise<CheckAnswer> {
  const at = await placed(ctx, null);
  if (!at.ok) return at.answer;
  const { p, where } = at;
  const r = await ctx.metrics.query(overAll(p, (s) => `${c.metric}{${s}}`));
  if (r.samples.length === 0) return noSeries(c.metric, where, c.exporter);
  const off = r.samples.filter((s) => num(s.value) === 0);
  const all = r.samples.length;
  const names = listed(off.map((s) => seriesName(s.metric)));
  const evidence = [
    evidenceOf(
      r,
      'metric',
      samplesObserved(off.length > 0 ? off : r.samples, { [c.counted]: all, down: off.length }),
      off.length > 0
        ? `The exporter cannot reach ${off.length} of ${all} ${c.product} (${c.metric} = 0): ${names}.`
        : `${all === 1 ? `The one ${c.product} answers` : `All ${all} ${c.product} answer`} the exporter (${c.metric} = 1).`,
    ),
  ];
  if (off.length > 0)
    return {
      verdict: 'holds',
      reason: `${off.length} of ${all} ${c.product} of ${where} cannot be reached by its exporter (${c.metric} = 0): ${names}`,
      evidence,
      subjects: off.map((s) => instanceOf(s.metric)),
      verification: { cause: c.id, expect: 'ruled_out', after_s: 60 },
    };
  return {
    verdict: 'ruled_out',
    reason: `${all === 1 ? `the one ${c.product}` : `all ${all} ${c.product}`} of ${where} ${all === 1 ? 'answers its exporter' : 'answer their exporters'} (${c.metric} = 1)`,
    evidence,
  };
}

/**
 * A server's sessions at `ratio` (the cause's setting) of its `max_connections` or more at the
 * check's moment (`mysql/connections-near-limit`, `postgres/connections-near-limit`): new
 * connections are about to be refused. One query, one value per instance, the evidence.
 */
export async function connectionsCheck(ctx: CheckContext, c: ConnectionsCheck): Promise<CheckAnswer> {
  const set = new Settings(ctx);
  const ratio = set.number('ratio', 0, 1);
  const at = await placed(ctx, set);
  if (!at.ok) return at.answer;
  const { p, where } = at;
  const r = await ctx.metrics.query(overAll(p, c.query));
  if (r.samples.length === 0) return noSeries(c.series, where, c.exporter);
  const rows = r.samples.map((s) => ({ name: seriesName(s.metric), instance: instanceOf(s.metric), used: num(s.value) })).sort((a, b) => b.used - a.used);
  const near = rows.filter((x) => x.used >= ratio);
  const observed = { ratio, servers: rows.slice(0, 20).map((x) => ({ instance: x.name, used: rounded(x.used) })) };
  const shown = (xs: typeof rows) => listed(xs.map((x) => `${x.name} at ${percent(x.used)}`));
  const evidence = [evidenceOf(r, 'metric', observed, `Sessions over max_connections: ${shown(rows)}.`)];
  if (near.length > 0)
    return {
      verdict: 'holds',
      reason: `${shown(near)} of max_connections (at least ${percent(ratio)}): new connections to ${where} are about to be refused`,
      evidence,
      subjects: near.map((x) => x.instance),
      verification: { cause: c.id, expect: 'ruled_out', after_s: 120 },
    };
  return {
    verdict: 'ruled_out',
    reason: `every ${c.product} of ${where} is below ${percent(ratio)} of max_connections (highest: ${shown(rows.slice(0, 1))})`,
    evidence,
  };
}

/**
 * A counter that rose by `min` (the cause's setting) or more over `window` (its setting, cut to
 * the alert's own by {@link alertWindow}), summed `by` the cause's labels (`postgres/deadlocks`,
 * `mysql/slow-queries`). One query, the evidence; the words are the cause's.
 */
export async function counterCheck(ctx: CheckContext, c: CounterCheck): Promise<CheckAnswer> {
  const set = new Settings(ctx);
  const min = set.number('min', 0);
  const window = set.duration('window');
  const at = await placed(ctx, set);
  if (!at.ok) return at.answer;
  const { p, where } = at;
  const w = alertWindow(ctx, c.metric, window);
  const r = await ctx.metrics.query(overAll(p, (s) => `sum by (${c.by.join(', ')}) (increase(${c.metric}{${s}}[${w.text}]))`));
  if (r.samples.length === 0) return noSeries(c.metric, where, c.exporter);
  const rows: CounterRow[] = r.samples
    .map((s: MetricSample) => ({ name: c.name?.(s.metric) ?? seriesName(s.metric), instance: instanceOf(s.metric), n: num(s.value) }))
    .sort((a, b) => b.n - a.n);
  const hit = rows.filter((x) => x.n >= min && x.n > 0);
  const total = rows.reduce((a, x) => a + (Number.isFinite(x.n) ? x.n : 0), 0);
  const shown = (xs: CounterRow[]) => listed(xs.map((x) => `${x.name}: ${Math.round(x.n)}`));
  const observed = {
    window: w.text,
    min,
    [c.observed.rows]: rows.slice(0, 20).map((x) => ({ [c.observed.name]: x.name, [c.observed.value]: rounded(x.n) })),
  };
  const evidence = [evidenceOf(r, 'metric', observed, `${c.counted} in the last ${w.text} (${w.why}): ${shown(rows)}.`)];
  const said = { rows, hit, total, shown, window: w.text, where, min };
  if (hit.length > 0)
    return {
      verdict: 'holds',
      reason: c.holds(said),
      evidence,
      subjects: [...new Set(hit.map((x) => x.instance))],
      verification: { cause: c.id, expect: 'ruled_out', after_s: w.s },
    };
  return { verdict: 'ruled_out', reason: c.ruledOut(said), evidence };
}
