/** The schedules component of doctor (this process's background tick): what it reads and how it judges it. */
import { part, type Part } from '../part.ts';

/** The background tick of this host process. */
export interface TickSeen {
  last_run_at: string | null;
  last_error: string | null;
  every_ms: number;
}

export function describeSchedules(tick: TickSeen, nowMs: number): Part {
  if (tick.last_error !== null)
    return part('fail', `the last background tick failed: ${tick.last_error}`, 'read the service log for "tick failed"; the tick retries on its own');
  if (tick.last_run_at === null)
    return part('warn', 'the background tick has not run yet in this process', `it runs every ${tick.every_ms / 1000} s once the service listens`);
  const age = nowMs - Date.parse(tick.last_run_at);
  if (age > 6 * tick.every_ms)
    return part(
      'fail',
      `the background tick last ran at ${tick.last_run_at} (${Math.round(age / 1000)} s ago)`,
      'the tick is stalled: read the service log and restart the service',
    );
  return part('ok', `the background tick last ran at ${tick.last_run_at}`);
}
