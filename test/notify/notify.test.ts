import { createHmac, timingSafeEqual } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import { HOUR, MINUTE, SECOND } from '../../host/clock.ts';
import { EpisodeRepo } from '../../host/episodes/episode.repo.ts';
import { NotifyDelivery, retryDelayMs } from '../../host/notify/delivery.service.ts';
import { NotifySettingsRepo } from '../../host/notify/notify-settings.repo.ts';
import { OutboxRepo } from '../../host/notify/outbox.repo.ts';
import { SettingsRepo } from '../../host/settings/settings.repo.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { signedIn } from '../helpers/people.ts';
import { receiver, type Receiver } from '../helpers/receiver.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';

const OWNER = 'owner@bank.example';
const ONCALL = 'oncall@bank.example';
const HOOK_SECRET = 'whsec-Q7v2-never-shown-0123456789';
const ROUTING_KEY = 'R0UTINGkeyNEVERshown0123456789ab';

const push = (ta: TestApp, alerts: unknown[]) => ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { alerts } });
const fire = (name: string, service: string, severity = 'critical') => ({
  name,
  service,
  severity,
  status: 'firing',
  id: `${service}-${name}`,
  summary: `${name} on ${service}`,
});
const events = async (ta: TestApp, type: string) => (await ta.call('GET', `/v1/ledger?type=${type}&order=asc&limit=2000`)).body.events as any[];
const episodes = async (ta: TestApp) => (await ta.call('GET', '/v1/episodes')).body.episodes as any[];

async function after(ta: TestApp, ms: number): Promise<void> {
  ta.clock.advance(ms);
  await ta.app.tick();
}

interface Setup {
  ta: TestApp;
  smtp: TestSmtp;
  hook: Receiver;
}

/** An operating install with SMTP mail, an extra on-call person and a webhook connector `hook`. */
async function setup(t: ExecutionContext, opts: { recipients?: string[]; targets?: string[]; publicUrl?: string } = {}): Promise<Setup> {
  const smtp = await startSmtp(t);
  const ta = await startApp(t, { env: { SERVICE_MAIL_CA_FILE: smtp.caFile, SERVICE_PUBLIC_URL: opts.publicUrl ?? 'https://oncall.bank.example/' } });
  await makeOperating(ta, OWNER);
  t.is(
    (await ta.call('PUT', '/v1/settings/mail', { body: { smtp_host: smtp.host, smtp_port: smtp.port, mail_from: 'oncall-service@bank.example' } })).status,
    200,
  );
  t.is((await ta.call('POST', '/v1/people', { body: { email: ONCALL, name: 'On Call', role: 'viewer' } })).status, 201);
  const hook = await receiver(t);
  t.is((await ta.call('PUT', '/v1/connectors/hook', { body: { kind: 'webhook', settings: { url: hook.url, secret: HOOK_SECRET } } })).status, 201);
  const saved = await ta.call('PUT', '/v1/settings/notifications', { body: { recipients: opts.recipients ?? [ONCALL], targets: opts.targets ?? ['hook'] } });
  t.is(saved.status, 200, JSON.stringify(saved.body));
  // These tests count the messages of openings, escalations and closes: autonomy off, so no
  // investigation adds its diagnosis message (test/investigation/investigation.test.ts tests that one).
  const { version: _v, source: _s, updated_at: _u, updated_by: _b, ...policy } = (await ta.call('GET', '/v1/policy')).body;
  t.is((await ta.call('PUT', '/v1/policy', { body: { ...policy, default_autonomy: 'off' } })).status, 200);
  return { ta, smtp, hook };
}

/** The signature a receiver computes: HMAC-SHA256 of the exact body bytes with the shared secret. */
function signatureHolds(body: Buffer, header: unknown, secret = HOOK_SECRET): boolean {
  if (typeof header !== 'string' || !header.startsWith('sha256=')) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(body).digest('hex'));
  const given = Buffer.from(header.slice('sha256='.length));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** No secret in responses, ledger, logs or the outbox. */
async function assertNoSecrets(t: ExecutionContext, ta: TestApp, seen: unknown[]): Promise<void> {
  const ledger = JSON.stringify((await ta.call('GET', '/v1/ledger?order=asc&limit=2000')).body);
  const outbox = JSON.stringify(await ta.app.db('notify_outbox').select('*'));
  for (const [where, text] of [
    ['responses', JSON.stringify(seen)],
    ['ledger', ledger],
    ['logs', ta.logs.join('\n')],
    ['outbox', outbox],
  ] as const) {
    t.false(text.includes(HOOK_SECRET), `the webhook secret is in the ${where}`);
    t.false(text.includes(ROUTING_KEY), `the routing key is in the ${where}`);
  }
}

test('without SERVICE_PUBLIC_URL the e-mail and the webhook link to the console address of the single sign-on settings; without either, url is null', async (t) => {
  const { ta, smtp, hook } = await setup(t, { publicUrl: '' });
  await push(ta, [fire('DiskFull', 'ledgerdb')]);
  await after(ta, 20 * SECOND);
  t.is(JSON.parse(hook.got[0]!.body.toString('utf8')).episode.url, null, 'no address known: no link');
  t.is((await ta.call('PUT', '/v1/settings/sso', { body: { console_address: 'https://console.bank.example/' } })).status, 200);
  await push(ta, [fire('HighErrorRate', 'checkout')]);
  await after(ta, 20 * SECOND);
  const opened = hook.got.map((g) => JSON.parse(g.body.toString('utf8'))).find((b) => b.episode.service === 'checkout');
  t.is(opened.episode.url, `https://console.bank.example/episodes/${opened.episode.id}`);
  const mails = await Promise.all([smtp.message(0), smtp.message(1)]);
  t.regex(mails.find((m) => m.subject.includes('checkout'))!.text, /Console: +https:\/\/console\.bank\.example\/episodes\//);
});

test('an incident opening and closing tells the on-call recipients by e-mail and the webhook, signed; the episode says who was told and how', async (t) => {
  const { ta, smtp, hook } = await setup(t);
  await push(ta, [fire('HighErrorRate', 'checkout')]);
  await after(ta, 20 * SECOND);

  // Opened: one e-mail, one signed POST.
  const mail = await smtp.message(0);
  t.deepEqual(mail.to, [ONCALL]);
  t.regex(mail.subject, /\[critical\] Incident opened: checkout \(HighErrorRate\)/);
  t.regex(mail.text, /Console: +https:\/\/oncall\.bank\.example\/episodes\//);
  t.is(hook.got.length, 1);
  const [opened] = hook.got;
  t.true(signatureHolds(opened!.body, opened!.headers['x-oncall-signature']), 'the signature is the HMAC-SHA256 of the exact body with the secret');
  t.false(signatureHolds(opened!.body, opened!.headers['x-oncall-signature'], 'another-secret-0123456789'), 'another secret does not verify');
  const body = JSON.parse(opened!.body.toString('utf8'));
  const [ep] = await episodes(ta);
  t.deepEqual(Object.keys(body).sort(), ['episode', 'event', 'sent_at']);
  t.is(body.event, 'incident.opened');
  t.deepEqual(body.episode, {
    id: ep.id,
    service: 'checkout',
    severity: 'critical',
    t_open: ep.t_open,
    alerts: ['HighErrorRate'],
    outcome: null,
    url: `https://oncall.bank.example/episodes/${ep.id}`,
  });
  t.is(body.sent_at, ta.clock.now().toISOString());

  // The outcome is escalated only now, saying who and how.
  const full = (await ta.call('GET', `/v1/episodes/${ep.id}`)).body;
  t.is(full.outcome, 'escalated');
  t.deepEqual(full.outcome_detail.told.sort(), [ONCALL, 'hook'].sort());
  t.deepEqual(
    full.outcome_detail.channels.sort((a: any, b: any) => (a.to < b.to ? -1 : 1)),
    [
      { to: 'hook', how: 'webhook' },
      { to: ONCALL, how: 'e-mail' },
    ],
  );
  t.regex(full.outcome_detail.reason, /told .*by e-mail|told .*through webhook/);
  const notified = await events(ta, 'outcome.notified');
  t.is(notified.length, 2);
  t.true(notified.every((e) => e.trace === ep.id && e.data.event === 'incident.opened' && e.data.attempt === 1));
  t.deepEqual(
    notified.map((e) => [e.data.to, e.data.kind]).sort(),
    [
      ['hook', 'webhook'],
      [ONCALL, 'email'],
    ].sort(),
  );
  t.is(notified.filter((e) => e.data.episode_outcome === 'escalated').length, 1, 'the first delivery escalates the episode, once');

  // Closed: the same people are told.
  await push(ta, [{ ...fire('HighErrorRate', 'checkout'), status: 'resolved' }]);
  await after(ta, SECOND);
  t.is((await episodes(ta))[0].state, 'closed');
  const closedMail = await smtp.message(1);
  t.regex(closedMail.subject, /Incident closed: checkout/);
  t.is(hook.got.length, 2);
  const closed = JSON.parse(hook.got[1]!.body.toString('utf8'));
  t.is(closed.event, 'incident.closed');
  t.is(closed.episode.id, ep.id);
  t.is(closed.episode.outcome, 'escalated');
  t.true(signatureHolds(hook.got[1]!.body, hook.got[1]!.headers['x-oncall-signature']));
  t.is((await events(ta, 'outcome.notified')).length, 4);
  t.deepEqual((await ta.call('GET', '/v1/notifications')).body.problems, []);
  await assertNoSecrets(t, ta, [full, await ta.call('GET', '/v1/connectors/hook')]);
  t.true((await ta.app.verifyLedger()).ok);
});

test('PagerDuty: trigger on open and resolve on close against a local Events API, dedup_key the episode id, severity mapped', async (t) => {
  const { ta } = await setup(t, { targets: [] });
  const pd = await receiver(t, '/v2/enqueue');
  t.is((await ta.call('PUT', '/v1/connectors/pd', { body: { kind: 'pagerduty', settings: { routing_key: ROUTING_KEY, url: pd.url } } })).status, 201);
  const got = await ta.call('GET', '/v1/connectors/pd');
  t.deepEqual(got.body.settings.routing_key, { set: true }, 'the routing key is write-only');
  t.is((await ta.call('PUT', '/v1/settings/notifications', { body: { targets: ['pd'] } })).status, 200);

  await push(ta, [fire('SlowRequests', 'payments', 'warning')]);
  await after(ta, 20 * SECOND);
  const [ep] = await episodes(ta);
  t.is(pd.got.length, 1);
  const trigger = JSON.parse(pd.got[0]!.body.toString('utf8'));
  t.like(trigger, { routing_key: ROUTING_KEY, event_action: 'trigger', dedup_key: ep.id, client_url: `https://oncall.bank.example/episodes/${ep.id}` });
  t.like(trigger.payload, { source: 'payments', severity: 'warning', timestamp: ep.t_open });
  t.regex(trigger.payload.summary, /\[warning\] payments: SlowRequests/);

  // A critical alert joins: the incident escalates, PagerDuty gets a trigger with the same key.
  await push(ta, [fire('Down', 'payments', 'critical')]);
  await ta.app.episodes.process();
  await ta.app.notifications.run();
  t.is(pd.got.length, 2);
  t.like(JSON.parse(pd.got[1]!.body.toString('utf8')), { event_action: 'trigger', dedup_key: ep.id, payload: { severity: 'critical' } });

  await push(ta, [
    { ...fire('SlowRequests', 'payments', 'warning'), status: 'resolved' },
    { ...fire('Down', 'payments'), status: 'resolved' },
  ]);
  await after(ta, SECOND);
  t.is(pd.got.length, 3);
  t.deepEqual(JSON.parse(pd.got[2]!.body.toString('utf8')), { routing_key: ROUTING_KEY, event_action: 'resolve', dedup_key: ep.id });
  const full = (await ta.call('GET', `/v1/episodes/${ep.id}`)).body;
  t.is(full.outcome_detail.value, 'escalated');
  t.deepEqual([...full.outcome_detail.told].sort(), [ONCALL, 'pd'].sort());
  t.true(full.outcome_detail.channels.some((c: any) => c.to === 'pd' && c.how === 'pagerduty'));
  await assertNoSecrets(t, ta, [got.body, full]);
});

test('a receiver that is down is retried with backoff from the injected clock, shows on the doctor, and is delivered once it is back', async (t) => {
  const { ta, hook } = await setup(t, { recipients: [] });
  hook.answer = 503;
  await push(ta, [fire('HighErrorRate', 'checkout')]);
  await after(ta, 20 * SECOND);
  const [ep] = await episodes(ta);
  t.is(hook.got.length, 1);
  let full = (await ta.call('GET', `/v1/episodes/${ep.id}`)).body;
  t.is(full.outcome, '', 'nobody was told: not escalated');
  t.regex(full.outcome_detail.reason, /telling hook: not delivered yet/);
  const failed = await events(ta, 'outcome.notify_attempt_failed');
  t.is(failed.length, 1);
  t.like(failed[0].data, { to: 'hook', kind: 'webhook', attempt: 1, next_at: new Date(ta.clock.now().getTime() + 30 * SECOND).toISOString() });
  t.regex(failed[0].data.problem, /HTTP 503/);

  const status = (await ta.call('GET', '/v1/notifications')).body;
  t.is(status.problems.length, 1);
  t.like(status.problems[0], { channel_kind: 'target', name: 'hook' });
  const doctor = (await ta.call('GET', '/v1/doctor?fresh=1')).body;
  const part = doctor.components.find((c: any) => c.name === 'notifications');
  t.is(part.status, 'fail');
  t.regex(part.detail, /target hook: .*HTTP 503/);

  await after(ta, 29 * SECOND);
  t.is(hook.got.length, 1, 'not retried before its time');
  hook.answer = 200;
  await after(ta, SECOND);
  t.is(hook.got.length, 2, 'retried 30 s after the first attempt, and delivered');
  full = (await ta.call('GET', `/v1/episodes/${ep.id}`)).body;
  t.is(full.outcome, 'escalated');
  t.deepEqual(full.outcome_detail.told, ['hook']);
  t.like((await events(ta, 'outcome.notified'))[0].data, { to: 'hook', attempt: 2 });
  t.deepEqual((await ta.call('GET', '/v1/notifications')).body.problems, []);
  const healed = (await ta.call('GET', '/v1/doctor?fresh=1')).body.components.find((c: any) => c.name === 'notifications');
  t.not(healed.status, 'fail', healed.detail);
  t.notRegex(healed.detail, /failed/);
  await after(ta, 2 * HOUR);
  t.is(hook.got.length, 2, 'a delivered message is never sent again');
});

test('a receiver that never comes back is given up after at least an hour of clock time: outcome.notify_failed, and the episode says nobody was told', async (t) => {
  const { ta, hook } = await setup(t, { recipients: [] });
  hook.answer = 'drop';
  await push(ta, [fire('HighErrorRate', 'checkout')]);
  await after(ta, 20 * SECOND);
  const started = ta.clock.now().getTime();
  const [ep] = await episodes(ta);
  // Step the clock a minute at a time for 70 minutes, ticking each time; after each attempt the
  // outbox row says when the next one is due.
  const row = async () =>
    (await ta.app.db('notify_outbox').where({ episode_id: ep.id, event: 'incident.opened' }).first('attempts', 'next_ms', 'state')) as {
      attempts: number;
      next_ms: number | string;
      state: string;
    };
  const gaps: number[] = [];
  let seen = (await row()).attempts;
  for (let i = 0; i < 70; i++) {
    await after(ta, MINUTE);
    const r = await row();
    if (r.attempts > seen && r.state === 'pending') gaps.push(Number(r.next_ms) - ta.clock.now().getTime());
    seen = r.attempts;
  }
  const attempts = await events(ta, 'outcome.notify_attempt_failed');
  const gaveUp = await events(ta, 'outcome.notify_failed');
  t.is(gaveUp.length, 1);
  t.true(Date.parse(gaveUp[0].at) - started >= HOUR, 'not given up before an hour had passed');
  t.is(gaveUp[0].data.attempts, (await row()).attempts, 'the final event counts every attempt');
  t.is(gaveUp[0].data.attempts, gaps.length + 2, 'the first, one per retry scheduled, and the last');
  // One event per change of state, not per attempt: the first failure, then the giving up.
  t.is(attempts.length, 1, attempts.map((e) => e.data.problem).join(' | '));
  t.like(attempts[0].data, { attempt: 1, next_at: new Date(Date.parse(attempts[0].at) + retryDelayMs(1)).toISOString() });
  t.like(gaveUp[0].data, { to: 'hook', kind: 'webhook', event: 'incident.opened' });
  t.regex(gaveUp[0].data.problem, /cannot reach|connection|socket|fetch failed|other side closed/i);
  // The schedule: 30 s, then doubling.
  t.true(gaps.length >= 4);
  t.deepEqual(
    gaps,
    gaps.map((_, i) => retryDelayMs(i + 2)),
  );
  t.deepEqual([retryDelayMs(1), ...gaps.slice(0, 3)], [30 * SECOND, MINUTE, 2 * MINUTE, 4 * MINUTE]);
  const full = (await ta.call('GET', `/v1/episodes/${ep.id}`)).body;
  t.is(full.outcome, '');
  t.regex(full.outcome_detail.reason, /nobody told yet: could not tell hook \(webhook\) after \d+ attempts/);
  const sent = hook.got.length;
  await after(ta, 3 * HOUR);
  t.is(hook.got.length, sent, 'nothing more is tried after giving up');
  const rows = await ta.app.db('notify_outbox').select('event', 'state').where({ episode_id: ep.id, event: 'incident.opened' });
  t.deepEqual(rows, [{ event: 'incident.opened', state: 'failed' }]);
});

test('with no mail configured, repeated attempts write one event per change of state: the first failure of each message, then its delivery once mail is set up', async (t) => {
  const smtp = await startSmtp(t);
  const ta = await startApp(t, { env: { SERVICE_MAIL_CA_FILE: smtp.caFile } });
  await makeOperating(ta, OWNER);
  t.is((await ta.call('POST', '/v1/people', { body: { email: ONCALL, name: 'On Call', role: 'viewer' } })).status, 201);
  const saved = await ta.call('PUT', '/v1/settings/notifications', { body: { recipients: [ONCALL], targets: [] } });
  t.is(saved.status, 200, JSON.stringify(saved.body));
  const { version: _v, source: _s, updated_at: _u, updated_by: _b, ...policy } = (await ta.call('GET', '/v1/policy')).body;
  t.is((await ta.call('PUT', '/v1/policy', { body: { ...policy, default_autonomy: 'off' } })).status, 200);
  await push(ta, [fire('HighErrorRate', 'checkout'), fire('DiskFull', 'ledgerdb')]);
  await after(ta, 20 * SECOND);
  // Twenty minutes of retries: 30 s, 1, 2, 4, 8 min.
  for (let i = 0; i < 20; i++) await after(ta, MINUTE);
  const rows = (await ta.app.db('notify_outbox').select('id', 'attempts', 'state', 'last_problem')) as Array<{
    attempts: number;
    state: string;
    last_problem: string;
  }>;
  t.true(rows.length >= 2, 'a message per incident');
  for (const r of rows) {
    t.is(r.state, 'pending');
    t.true(r.attempts >= 5, `tried again and again (${r.attempts})`);
  }
  const failed = await events(ta, 'outcome.notify_attempt_failed');
  t.is(failed.length, rows.length, 'one event per message, not one per attempt');
  for (const e of failed) t.like(e.data, { to: ONCALL, channel: 'email', attempt: 1 });
  t.is(failed[0].data.problem, rows[0]!.last_problem);

  // Mail set up: the next attempt delivers, and that change is recorded once per message.
  t.is(
    (await ta.call('PUT', '/v1/settings/mail', { body: { smtp_host: smtp.host, smtp_port: smtp.port, mail_from: 'oncall-service@bank.example' } })).status,
    200,
  );
  for (let i = 0; i < 20 && (await events(ta, 'outcome.notified')).length < rows.length; i++) await after(ta, MINUTE);
  t.is((await events(ta, 'outcome.notified')).length, rows.length);
  t.is((await events(ta, 'outcome.notify_attempt_failed')).length, rows.length, 'no further failure recorded');
  t.true((await ta.app.verifyLedger()).ok);
});

test('with nobody configured the episode says so plainly and the doctor warns that no on-call recipients are configured', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const doctor = (await ta.call('GET', '/v1/doctor?fresh=1')).body;
  const part = doctor.components.find((c: any) => c.name === 'notifications');
  t.is(part.status, 'warn');
  t.regex(part.detail, /no on-call recipients are configured/);
  await push(ta, [fire('HighErrorRate', 'checkout')]);
  await after(ta, 20 * SECOND);
  const [ep] = await episodes(ta);
  t.is(ep.outcome, '');
  t.is(ep.outcome_detail.reason, 'nobody to tell: no on-call recipients or targets are set');
  // Nothing about the opening is queued (acting may later e-mail the install's owner an escalation: test/acting/acting.test.ts).
  t.is(((await ta.app.db('notify_outbox').count({ n: '*' }).where({ event: 'incident.opened' }).first()) as any).n == 0, true);
});

test('the doctor warns when on-call recipients are set but no mail provider is configured', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta, OWNER);
  t.is((await ta.call('PUT', '/v1/settings/notifications', { body: { recipients: [OWNER] } })).status, 200);
  const part = (await ta.call('GET', '/v1/doctor?fresh=1')).body.components.find((c: any) => c.name === 'notifications');
  t.is(part.status, 'warn');
  t.regex(part.detail, /the recipients cannot be e-mailed: no mail provider configured/);
  t.regex(part.fix, /PUT \/v1\/settings\/mail/);
});

test('an info-only episode (a notice) pages nobody; when it becomes an incident the recipients are told of its opening', async (t) => {
  const { ta, hook } = await setup(t, { recipients: [] });
  await push(ta, [fire('Reminder', 'batch', 'info')]);
  await after(ta, 20 * SECOND);
  const [ep] = await episodes(ta);
  t.is(ep.kind, 'notice');
  t.is(hook.got.length, 0);
  t.regex(ep.outcome_detail.reason, /a notice/);
  await push(ta, [fire('Failed', 'batch', 'warning')]);
  await ta.app.episodes.process();
  await ta.app.notifications.run();
  t.is(hook.got.length, 1);
  t.like(JSON.parse(hook.got[0]!.body.toString('utf8')), { event: 'incident.opened', episode: { id: ep.id, severity: 'warning' } });
});

test('settings: GET answers what PUT saved; PUT of exactly what GET answered is accepted; an older version is 409 version_conflict', async (t) => {
  const { ta } = await setup(t);
  const viewer = await signedIn(ta, 'viewer@bank.example', 'viewer');
  const got = await ta.call('GET', '/v1/settings/notifications', { token: viewer });
  t.is(got.status, 200);
  t.like(got.body, { recipients: [ONCALL], targets: ['hook'], version: 1, updated_by: 'admin-token' });
  t.is(got.body.updated_at, ta.clock.now().toISOString());
  t.is((await ta.call('PUT', '/v1/settings/notifications', { token: viewer, body: got.body })).status, 403, 'a viewer reads, never writes');

  const same = await ta.call('PUT', '/v1/settings/notifications', { body: got.body });
  t.is(same.status, 200, JSON.stringify(same.body));
  t.deepEqual(same.body, got.body, 'the same settings change nothing: same version');
  const changed = await ta.call('PUT', '/v1/settings/notifications', { body: { ...got.body, recipients: [ONCALL, OWNER.toUpperCase()] } });
  t.is(changed.status, 200);
  t.like(changed.body, { version: 2, recipients: [ONCALL, OWNER] });
  const stale = await ta.call('PUT', '/v1/settings/notifications', { body: { ...got.body, targets: [] } });
  t.is(stale.status, 409);
  t.is(stale.body.error, 'version_conflict');
  t.deepEqual((await ta.call('GET', '/v1/settings/notifications')).body.targets, ['hook'], 'the refused change was not made');

  const saved = await events(ta, 'config.notifications_saved');
  t.is(saved.length, 2);
  t.deepEqual(saved[1].data.diff, { recipients: { added: [OWNER], removed: [], reordered: false }, targets: { added: [], removed: [], reordered: false } });
  t.is(saved[1].data.version, 2);
});

test('settings: bad input answers 400 naming the field', async (t) => {
  const { ta } = await setup(t);
  t.is((await ta.call('PUT', '/v1/connectors/web', { body: { kind: 'http', settings: { base_url: 'http://127.0.0.1:9' } } })).status, 201);
  const cases: Array<[unknown, RegExp]> = [
    [{ recipients: ['stranger@bank.example'] }, /^recipients\.0: stranger@bank\.example is not a person of this install/],
    [{ recipients: [ONCALL, 'not-an-address'] }, /^recipients\.1 must match format "email"/],
    [{ targets: ['nope'] }, /^targets\.0: no connector named nope/],
    [{ targets: ['hook', 'web'] }, /^targets\.1: connector web is of kind http, which cannot notify \(kinds that can: pagerduty, webhook\)/],
    [{ recipients: 'x' }, /^recipients must be array/],
    [{ extra: true }, /unknown field extra/],
  ];
  for (const [body, message] of cases) {
    const res = await ta.call('PUT', '/v1/settings/notifications', { body });
    t.is(res.status, 400, JSON.stringify(body));
    t.is(res.body.error, 'invalid_body');
    t.regex(res.body.message, message);
  }
  t.is((await ta.call('PUT', '/v1/settings/notifications', { body: '{' })).body.error, 'invalid_json');
  t.is((await ta.call('GET', '/v1/settings/notifications')).body.version, 1, 'nothing was saved');
});

test('the catalogue lists webhook and pagerduty with the notify capability and their secrets write-only', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const cat = (await ta.call('GET', '/v1/connectors/catalogue')).body;
  const kinds = Object.fromEntries((cat.kinds ?? cat).map((k: any) => [k.kind, k]));
  t.deepEqual(kinds.webhook.capabilities, ['test', 'notify']);
  t.deepEqual(kinds.webhook.secrets, ['secret']);
  t.deepEqual(kinds.pagerduty.capabilities, ['test', 'notify']);
  t.deepEqual(kinds.pagerduty.secrets, ['routing_key']);
  t.is(kinds.pagerduty.settings.properties.url.default, 'https://events.pagerduty.com/v2/enqueue');
  t.false(kinds.http.capabilities.includes('notify'));
});

test('a lease: a delivery taken by one host cannot be taken by another until the lease runs out, and the first host then records nothing', async (t) => {
  const { ta, hook } = await setup(t, { recipients: [] });
  const outbox = new OutboxRepo(ta.app.db);
  hook.answer = 503;
  await push(ta, [fire('HighErrorRate', 'checkout')]);
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  const now = ta.clock.now().getTime();
  const [row] = await outbox.due(now, 10);
  t.truthy(row);
  t.true(await outbox.claim(row!.id, 'host-a', now, now + 2 * MINUTE));
  t.false(await outbox.claim(row!.id, 'host-b', now, now + 2 * MINUTE), 'taken: the other host cannot have it');
  t.deepEqual(await outbox.due(now, 10), [], 'a leased delivery is not due for anyone');
  await ta.app.notifications.run();
  t.is(hook.got.length, 0, 'the app (another holder) did not send it');
  ta.clock.advance(2 * MINUTE);
  const later = ta.clock.now().getTime();
  t.true(await outbox.claim(row!.id, 'host-b', later, later + 2 * MINUTE), 'an expired lease can be taken over');
  const held = await ta.app.db.transaction((trx) => outbox.held(trx, row!.id, 'host-a'));
  t.is(held, null, 'host-a no longer holds it, so its late outcome is not recorded');
});

test('concurrent workers on one database deliver every message exactly once', async (t) => {
  const { ta, hook } = await setup(t, { recipients: [] });
  const services = Array.from({ length: 12 }, (_, i) => `svc-${i}`);
  await push(
    ta,
    services.map((s) => fire('Down', s)),
  );
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  // A second worker with its own holder, as another host process would have, counting what it sends.
  const sentByOther: string[] = [];
  const other = new NotifyDelivery({
    outbox: new OutboxRepo(ta.app.db),
    settings: new NotifySettingsRepo(new SettingsRepo(ta.app.db)),
    episodes: new EpisodeRepo(ta.app.db),
    mail: { send: async () => ({ ok: true }) },
    targets: { notify: async (_name, m) => (sentByOther.push(m.episode.id), { ok: true, problem: null, kind: 'webhook' }) },
    ledger: ta.app.ledger,
    clock: ta.clock,
    log: ta.app.log,
  });
  await Promise.all([ta.app.notifications.run(), other.run(), ta.app.notifications.run(), other.run()]);
  const byApp = hook.got.map((g) => JSON.parse(g.body.toString('utf8')).episode.id as string);
  const all = [...byApp, ...sentByOther];
  t.is(all.length, services.length, `every message once (app ${byApp.length}, other ${sentByOther.length})`);
  t.is(new Set(all).size, services.length, 'no message twice');
  t.is((await events(ta, 'outcome.notified')).length, services.length);
  await other.stop();
});

test('an incident e-mail the relay refuses leaves break-glass sign-in closed: only codes and test e-mails move it', async (t) => {
  const { ta, smtp } = await setup(t, { targets: [] });
  t.is((await ta.call('POST', '/v1/settings/mail/test', { body: { to: 'ops@bank.example' } })).status, 200);
  t.deepEqual((await ta.call('GET', '/v1/settings/mail')).body.break_glass, { open: false, reason: null });
  smtp.refuse('rcpt');
  await push(ta, [fire('HighErrorRate', 'checkout')]);
  await after(ta, 20 * SECOND);
  const failed = await events(ta, 'outcome.notify_attempt_failed');
  t.is(failed.length, 1, 'the incident e-mail was tried and refused');
  t.regex(failed[0].data.problem, /the e-mail was not sent/);
  t.deepEqual((await ta.call('GET', '/v1/settings/mail')).body.break_glass, { open: false, reason: null });
  t.false((await ta.call('GET', '/v1/status')).body.auth.break_glass?.open ?? false);
});
