/**
 * Times as a person reads them: the browser's locale and time zone, with the zone named
 * ("24 Nov 2026, 07:10:00 UTC"), so a time copied into a ticket or a chat is never ambiguous.
 */
const FORMAT = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  timeZoneName: 'short',
});

/** An ISO time in words with its time zone; `none` when there is none. */
export function when(iso: string | null | undefined, none = '—'): string {
  if (iso === null || iso === undefined || iso === '') return none;
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : FORMAT.format(d);
}
