// The daily digest's timer (host/digest/day.ts): a run whose timer fires late, as on a host that
// stalled for a few seconds at that minute, still sends that day's digest; only a stall of more
// than 15 minutes skips it, and that is logged. node-cron's own default skipped a run 2 s late.
// Node's mock timers stand in for the real minute (Date and setTimeout), so nothing waits.
import { mock } from 'node:test';
import { PassThrough } from 'node:stream';
import test from 'ava';
import { scheduleDaily } from '../../host/digest/day.ts';
import { createLogger } from '../../host/log.ts';

function logLines(): { log: ReturnType<typeof createLogger>; lines: () => Array<Record<string, unknown>> } {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c.toString()));
  return {
    log: createLogger({ logLevel: 'info' }, stream),
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** Lets the timer's callback and the task it starts run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

test.serial('a daily run whose timer fires seconds late still runs, for the day it was due; one 20 minutes late is skipped and logged', async (t) => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: Date.parse('2026-11-28T06:59:58.000Z') });
  const { log, lines } = logLines();
  const due: string[] = [];
  const task = scheduleDaily('08:00', 'Europe/Zurich', 'digest:test', async (at) => void due.push(at.toISOString()), log);
  try {
    // 08:00 in Zurich (winter) is 07:00 UTC; the timer fires 5 s late.
    mock.timers.setTime(Date.parse('2026-11-28T07:00:05.000Z'));
    mock.timers.tick(0);
    await settle();
    t.deepEqual(due, ['2026-11-28T07:00:00.000Z'], 'sent, for the minute it was due');
    t.is(task.getNextRun()?.toISOString(), '2026-11-29T07:00:00.000Z');

    // The next day the host is stalled for 20 minutes across 08:00: that run is skipped and said.
    mock.timers.setTime(Date.parse('2026-11-29T07:20:00.000Z'));
    mock.timers.tick(0);
    await settle();
    t.deepEqual(due, ['2026-11-28T07:00:00.000Z']);
    const missed = lines().filter((l) => l.level === 40);
    t.is(missed.length, 1);
    t.like(missed[0], { task: 'digest:test', due: '2026-11-29T07:00:00.000Z' });
    t.regex(String(missed[0]!.msg), /the run due at 08:00 was missed/);
    t.is(task.getNextRun()?.toISOString(), '2026-11-30T07:00:00.000Z', 'and the day after runs as usual');
  } finally {
    await task.destroy();
    mock.timers.reset();
  }
});
