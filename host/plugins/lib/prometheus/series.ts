import type { EvidenceInput, MetricSample, ReadOrigin } from '../../contract.ts';
import { num, rounded } from './promql.ts';

/** The most series an evidence item lists; the rest are counted. */
export const MAX_SERIES = 20;

/** A series' labels without the metric name. */
export function labelsOf(metric: Record<string, string>): Record<string, string> {
  const { __name__: _name, ...rest } = metric;
  return rest;
}

/** A short name of a series for a sentence: its `instance`, else its labels. */
export function seriesName(metric: Record<string, string>, prefer: string[] = ['instance']): string {
  const l = labelsOf(metric);
  const parts = prefer.filter((k) => l[k] !== undefined).map((k) => (prefer.length === 1 ? l[k]! : `${k}=${l[k]!}`));
  if (parts.length > 0) return parts.join(' ');
  const all = Object.entries(l).map(([k, v]) => `${k}=${v}`);
  return all.length === 0 ? '(no labels)' : all.join(',');
}

/** Names for a sentence: at most `max`, then how many more. */
export function listed(names: string[], max = 5): string {
  return names.length <= max ? names.join(', ') : `${names.slice(0, max).join(', ')} and ${names.length - max} more`;
}

/** Samples as `observed` keeps them: labels and value, at most MAX_SERIES, with the total. */
export function samplesObserved(samples: MetricSample[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...extra,
    series: samples.slice(0, MAX_SERIES).map((s) => ({ labels: labelsOf(s.metric), value: rounded(num(s.value)) })),
    total: samples.length,
  };
}

/** An evidence item of a reader's answer: source, query and time as read. */
export function evidenceOf(answer: ReadOrigin, kind: string, observed: unknown, excerpt: string): EvidenceInput {
  return { source: answer.source, kind, query: answer.query, at: answer.at, observed, excerpt };
}

/** `1 process`, `3 processes`: a count with its noun. */
export function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
