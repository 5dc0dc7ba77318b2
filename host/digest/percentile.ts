/**
 * The nearest-rank percentile (`p` in 0..1) of `values`, in whole seconds when given
 * milliseconds; null when there is no sample.
 */
export function percentileSeconds(valuesMs: readonly number[], p: number): number | null {
  if (valuesMs.length === 0) return null;
  const sorted = [...valuesMs].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(p * sorted.length));
  return Math.round(Math.max(0, sorted[rank - 1]!) / 1000);
}
