/** Small text helpers the core pack's reasons share (a pack folder stands alone: no host import; `cut` is `ctx.lib.text.cut`). */

/** "20 minutes before", "1 minute before", "as", "3 minutes after" the moment `to`, for a reason a person reads. */
export function minutesBefore(at: string, to: string): string {
  const m = Math.round((Date.parse(to) - Date.parse(at)) / 60_000);
  if (m === 0) return 'as';
  const n = Math.abs(m);
  return `${n} minute${n === 1 ? '' : 's'} ${m > 0 ? 'before' : 'after'}`;
}

/** A moment as people read it in a reason: `2026-11-24 08:10:00Z`. */
export function shownTime(at: string): string {
  const t = Date.parse(at);
  return Number.isNaN(t)
    ? at
    : new Date(t)
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d{3}Z$/, 'Z');
}
