/** The calendar day (`YYYY-MM-DD`) of a moment in a time zone. */
export function dayIn(at: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(at);
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? '00';
  return `${get('year')}-${get('month')}-${get('day')}`;
}

/** node-cron's expression (seconds first) for every day at `HH:MM`. */
export function dailyCron(hhmm: string): string {
  const [h, m] = hhmm.split(':');
  return `0 ${Number(m)} ${Number(h)} * * *`;
}
