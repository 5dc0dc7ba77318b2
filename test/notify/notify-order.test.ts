// Issue 22, item 7 (delivery): the outbox delivers the most urgent messages first, each recipient
// and target on a lane of its own (a slow one holds up no other), and gathers a person's due
// e-mails into one, at most one e-mail per person every 30 s unless a critical one is due.
import { randomUUID } from 'node:crypto';
import test from 'ava';
import { SECOND } from '../../host/clock.ts';
import { EpisodeRepo } from '../../host/episodes/episode.repo.ts';
import { NotifyDelivery, PERSON_GAP_MS } from '../../host/notify/delivery.service.ts';
import { NotifySettingsRepo } from '../../host/notify/notify-settings.repo.ts';
import { OutboxRepo, type ChannelKind } from '../../host/notify/outbox.repo.ts';
import type { NotifyMessage } from '../../host/plugins/contract.ts';
import { SettingsRepo } from '../../host/settings/settings.repo.ts';
import { startApp, type TestApp } from '../helpers/app.ts';

interface Sent {
  to: string;
  subject: string;
  text: string;
  at: number;
}

/** A delivery worker on the app's database whose mail and targets are recorded (targets may be slow). */
function worker(
  ta: TestApp,
  slow: Record<string, number | (() => Promise<void>)> = {},
): { delivery: NotifyDelivery; mails: Sent[]; calls: Array<{ to: string; m: NotifyMessage; at: number }> } {
  const mails: Sent[] = [];
  const calls: Array<{ to: string; m: NotifyMessage; at: number }> = [];
  const delivery = new NotifyDelivery({
    outbox: new OutboxRepo(ta.app.db),
    settings: new NotifySettingsRepo(new SettingsRepo(ta.app.db)),
    episodes: new EpisodeRepo(ta.app.db),
    mail: { send: async (to, subject, text) => (mails.push({ to, subject, text, at: Date.now() }), { ok: true }) },
    targets: {
      notify: async (name, m) => {
        const wait = slow[name] ?? 0;
        await (typeof wait === 'function' ? wait() : new Promise((r) => setTimeout(r, wait)));
        calls.push({ to: name, m, at: Date.now() });
        return { ok: true, problem: null, kind: 'webhook' };
      },
    },
    ledger: ta.app.ledger,
    clock: ta.clock,
    log: ta.app.log,
  });
  return { delivery, mails, calls };
}

async function queue(ta: TestApp, channel_kind: ChannelKind, channel: string, severity: 'critical' | 'warning' | 'info', service: string): Promise<void> {
  const now = ta.clock.now();
  await ta.app.db.transaction((trx) =>
    new OutboxRepo(ta.app.db).add(trx, {
      id: randomUUID(),
      episode_id: randomUUID(),
      event: 'incident.opened',
      channel_kind,
      channel,
      episode: { id: randomUUID(), service, severity, t_open: now.toISOString(), alerts: ['Down'], outcome: null, url: null },
      created_at: now.toISOString(),
      created_ms: now.getTime(),
      next_ms: now.getTime(),
    }),
  );
}

test('the most urgent message goes first, whatever waited longer', async (t) => {
  const ta = await startApp(t, { manualTick: true });
  for (let i = 0; i < 40; i++) await queue(ta, 'target', 'hook', i % 2 ? 'info' : 'warning', `noise-${i}`);
  ta.clock.advance(SECOND);
  await queue(ta, 'target', 'hook', 'critical', 'payments');
  const { delivery, calls } = worker(ta);
  await delivery.run();
  t.is(calls.length, 41);
  t.is(calls[0]!.m.episode.service, 'payments', 'critical first');
  t.true(
    calls.slice(1).every((c, i, all) => i === 0 || rank(all[i - 1]!.m) >= rank(c.m)),
    'then warning before info',
  );
  await delivery.stop();
});
const rank = (m: NotifyMessage): number => ({ critical: 2, warning: 1, info: 0 })[m.episode.severity];

test('each target is a lane of its own: a slow target holds up no other', async (t) => {
  const ta = await startApp(t, { manualTick: true });
  for (let i = 0; i < 3; i++) await queue(ta, 'target', 'slow', 'warning', `slow-${i}`);
  for (let i = 0; i < 5; i++) await queue(ta, 'target', 'fast', 'warning', `fast-${i}`);
  // The slow target answers only once the fast one has had all five (or after 30 s, and the test
  // then fails): a lane held up behind the slow target would never get there.
  let fastDone!: () => void;
  const allFast = new Promise<void>((r) => (fastDone = r));
  const { delivery, calls } = worker(ta, { slow: () => Promise.race([allFast, new Promise<void>((r) => setTimeout(r, 30_000))]) });
  const watch = setInterval(() => {
    if (calls.filter((c) => c.to === 'fast').length === 5) fastDone();
  }, 10);
  t.teardown(() => clearInterval(watch));
  const started = Date.now();
  await delivery.run();
  const fast = calls.filter((c) => c.to === 'fast');
  const slow = calls.filter((c) => c.to === 'slow');
  t.is(fast.length, 5);
  t.is(slow.length, 3);
  // By the order of the answers, not their times: both can fall in the same millisecond.
  t.true(
    calls.indexOf(fast.at(-1)!) < calls.indexOf(slow[0]!),
    `the fast target was done (${fast.at(-1)!.at - started} ms) before the slow one's first answer (${slow[0]!.at - started} ms)`,
  );
  await delivery.stop();
});

test("a person's due messages go as one e-mail; the next waits 30 s and gathers what came, unless it is critical", async (t) => {
  const ta = await startApp(t, { manualTick: true });
  const { delivery, mails } = worker(ta);
  for (const s of ['billing', 'search', 'ledger']) await queue(ta, 'email', 'ops@bank.example', 'warning', s);
  await queue(ta, 'email', 'dba@bank.example', 'warning', 'db');
  await delivery.run();
  t.deepEqual(mails.map((m) => m.to).sort(), ['dba@bank.example', 'ops@bank.example'], 'one e-mail each');
  const ops = mails.find((m) => m.to === 'ops@bank.example')!;
  t.regex(ops.subject, /^\[warning\] 3 notifications: Incident opened: /);
  t.regex(ops.text, /----- 1 of 3[\s\S]*----- 2 of 3[\s\S]*----- 3 of 3/);
  const gathered = (await ta.call('GET', '/v1/ledger?type=outcome.notified&limit=10')).body.events as any[];
  t.is(gathered.filter((e) => e.data.gathered === 3).length, 3, 'each message is recorded as told, gathered in one e-mail');

  // Within 30 s: a warning waits, a critical goes at once and takes the waiting one with it.
  ta.clock.advance(5 * SECOND);
  await queue(ta, 'email', 'ops@bank.example', 'warning', 'cache');
  await delivery.run();
  t.is(mails.filter((m) => m.to === 'ops@bank.example').length, 1, 'paced');
  ta.clock.advance(5 * SECOND);
  await queue(ta, 'email', 'ops@bank.example', 'critical', 'payments');
  await delivery.run();
  const second = mails.filter((m) => m.to === 'ops@bank.example')[1]!;
  t.regex(second.subject, /^\[critical\] 2 notifications: Incident opened: payments/);
  t.regex(second.text, /cache/);

  // After the gap a lone warning is its own e-mail again.
  await queue(ta, 'email', 'ops@bank.example', 'warning', 'search2');
  await delivery.run();
  t.is(mails.filter((m) => m.to === 'ops@bank.example').length, 2);
  ta.clock.advance(PERSON_GAP_MS);
  await delivery.run();
  const third = mails.filter((m) => m.to === 'ops@bank.example')[2]!;
  t.regex(third.subject, /^\[warning\] Incident opened: search2/);
  t.true((await ta.app.verifyLedger()).ok);
  await delivery.stop();
});
