import cron, { type ScheduledTask } from 'node-cron';
import { MINUTE } from '../clock.ts';
import type { Logger } from '../log.ts';

/**
 * How late the daily timer may fire and still send. node-cron's own default is 1 s: a host whose
 * event loop or CPU stalled for a second or two at that minute (a long GC pause, a busy VM)
 * skipped the day's digest, silently. A digest a few minutes late is better than none; the day's
 * lease still lets exactly one host send it.
 */
export const DAILY_LATE_MS = 15 * MINUTE;

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

/**
 * Runs `fn` (given the minute it was due) every day at `HH:MM` in `timeZone`, even when the
 * timer fires up to DAILY_LATE_MS late; a run missed by more than that is logged (and the next
 * day's runs as usual).
 */
export function scheduleDaily(hhmm: string, timeZone: string, name: string, fn: (due: Date) => Promise<unknown>, log: Logger): ScheduledTask {
  const task = cron.schedule(dailyCron(hhmm), (ctx) => fn(ctx.date), {
    name,
    timezone: timeZone,
    noOverlap: true,
    unref: true,
    missedExecutionTolerance: DAILY_LATE_MS,
  });
  task.on('execution:missed', (ctx) =>
    log.warn(
      { task: name, due: ctx.date.toISOString() },
      `the run due at ${hhmm} was missed: the process was stalled for more than ${DAILY_LATE_MS / MINUTE} minutes`,
    ),
  );
  return task;
}
