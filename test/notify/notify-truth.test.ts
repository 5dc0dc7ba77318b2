// Issue 22, item 12: notices that tell the truth. No escalation of an incident that closed meanwhile,
// no page for a notice, who is about to be told instead of an old "nobody to tell", the diagnosis
// said when it went, an e-mail to the approvers of an autonomy raise and the digest naming them,
// the fix the halt held back proposed again after the resume, and `action.refused` on the
// episode's trace.
import test, { type ExecutionContext } from 'ava';
import { MINUTE, SECOND } from '../../host/clock.ts';
import { AutonomyRepo } from '../../host/governance/autonomy.repo.ts';
import type { Level } from '../../host/governance/levels.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { acted, fixVendor } from '../helpers/fix-vendor.ts';
import { signedIn } from '../helpers/people.ts';
import { receiver } from '../helpers/receiver.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';

const OWNER = 'owner@bank.example';
const APPROVER = 'approver@bank.example';

const ok = (r: { status: number; body: unknown }): void => {
  if (r.status >= 300) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
};
const episode = async (ta: TestApp, id: string) => (await ta.call('GET', `/v1/episodes/${id}`)).body;
const types = (ep: any) => (ep.timeline as any[]).map((e) => e.type as string);
const stuck = (severity = 'critical', status = 'firing') => ({ name: 'WorkerStuck', service: 'jobs', severity, status, id: 'jobs-stuck' });

/** An operating install mailing through a test SMTP server, the fixer vendor, and `jobs` (owner, one approver) at `level`. */
async function fixing(t: ExecutionContext, level: Level): Promise<{ ta: TestApp; smtp: TestSmtp; log: string; approver: string }> {
  const smtp = await startSmtp(t);
  const v = fixVendor(t);
  const ta = await startApp(t, { env: { SERVICE_MAIL_CA_FILE: smtp.caFile, SERVICE_PLUGINS_DIR: v.dir } });
  await makeOperating(ta, OWNER);
  ok(await ta.call('PUT', '/v1/settings/mail', { body: { smtp_host: smtp.host, smtp_port: smtp.port, mail_from: 'oncall@bank.example' } }));
  const approver = await signedIn(ta, APPROVER, 'viewer');
  ok(await ta.call('PUT', '/v1/connectors/fix', { body: { kind: 'fixer', settings: { log: v.log } } }));
  ok(
    await ta.call('PUT', '/v1/estate/overrides', {
      body: { services: { jobs: { owner: OWNER, approvers: [APPROVER], tier: 3, links: [{ kind: 'workload', match: 'job="jobs"', connector: 'fix' }] } } },
    }),
  );
  await ta.app.ledger.transact(async (trx) =>
    new AutonomyRepo(ta.app.db).set(trx, { service: 'jobs', level, changed_at: ta.clock.now().toISOString(), changed_by: 'test', source: 'api' }),
  );
  return { ta, smtp, log: v.log, approver };
}

/** Fires WorkerStuck (at `severity`), opens the episode, investigates it and runs the action path; answers its id. */
async function diagnosed(ta: TestApp, severity = 'critical'): Promise<string> {
  ok(await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: stuck(severity) }));
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  await ta.app.investigation.investigations.run();
  await ta.app.acting.acting.run();
  return ((await ta.call('GET', '/v1/episodes?query=service:jobs')).body.episodes as any[])[0].id;
}

test('an escalation still waiting when the incident closes is dropped, not delivered to a fixed incident; the close still goes', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta, OWNER);
  const hook = await receiver(t);
  ok(await ta.call('PUT', '/v1/connectors/hook', { body: { kind: 'webhook', settings: { url: hook.url, secret: 'whsec-0123456789abcdef' } } }));
  ok(await ta.call('PUT', '/v1/settings/notifications', { body: { recipients: [], targets: ['hook'] } }));
  const { version: _v, source: _s, updated_at: _u, updated_by: _b, ...policy } = (await ta.call('GET', '/v1/policy')).body;
  ok(await ta.call('PUT', '/v1/policy', { body: { ...policy, default_autonomy: 'off' } }));
  const push = (alerts: unknown[]) => ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { alerts } });
  const slow = { name: 'SlowRequests', service: 'pay', severity: 'warning', status: 'firing', id: 'pay-slow' };
  const down = { name: 'Down', service: 'pay', severity: 'critical', status: 'firing', id: 'pay-down' };

  ok(await push([slow]));
  ta.clock.advance(20 * SECOND);
  await ta.app.tick();
  t.deepEqual(
    hook.got.map((g) => JSON.parse(g.body.toString('utf8')).event),
    ['incident.opened'],
  );
  // The receiver fails; a critical alert escalates the incident: the escalation waits for its retry.
  hook.answer = 500;
  ok(await push([down]));
  await ta.app.episodes.process();
  await ta.app.notifications.run();
  t.is((await ta.app.db('notify_outbox').where({ event: 'incident.escalated', state: 'pending' })).length, 1);
  // Both alerts resolve: the incident closes before the retry.
  ok(
    await push([
      { ...slow, status: 'resolved' },
      { ...down, status: 'resolved' },
    ]),
  );
  await ta.app.episodes.process();
  hook.answer = 202;
  ta.clock.advance(5 * MINUTE);
  await ta.app.tick();
  const events = hook.got.map((g) => JSON.parse(g.body.toString('utf8')).event);
  t.deepEqual(events, ['incident.opened', 'incident.escalated', 'incident.closed'], 'the escalation’s one failed attempt, then only the close');
  t.deepEqual((await ta.app.db('notify_outbox').select('event', 'state')).map((r: any) => `${r.event}:${r.state}`).sort(), [
    'incident.closed:sent',
    'incident.escalated:stale',
    'incident.opened:sent',
  ]);
  const [ep] = (await ta.call('GET', '/v1/episodes')).body.episodes as any[];
  const dropped = (await ta.call('GET', `/v1/ledger?trace=${ep.id}&type=outcome.notify_dropped`)).body.events as any[];
  t.is(dropped.length, 1);
  t.regex(dropped[0].reason, /closed before 1 message\(s\) were delivered: not sent \(incident\.escalated to hook\)/);
  t.true((await ta.app.verifyLedger()).ok);
});

test('a notice pages nobody: its path ends without an escalation, an e-mail or an approval request, and it is never marked escalated', async (t) => {
  for (const level of ['shadow', 'L1'] as const) {
    const { ta, log } = await fixing(t, level);
    const id = await diagnosed(ta, 'info');
    await ta.app.notifications.run();
    const ep = await episode(ta, id);
    t.is(ep.kind, 'notice', level);
    t.is(ep.path_state, 'done', level);
    t.false(types(ep).includes('outcome.escalated'), `${level}: no escalation`);
    t.true(types(ep).includes('outcome.not_escalated'), level);
    t.regex(ep.timeline.find((e: any) => e.type === 'outcome.not_escalated').reason, /^a notice \(information only\): nobody is paged; /);
    t.is(ep.outcome, '', level);
    t.deepEqual(await ta.app.db('notify_outbox').select('event', 'channel'), [], `${level}: nobody is e-mailed or paged`);
    t.deepEqual((await ta.call('GET', '/v1/approvals')).body.approvals, [], `${level}: nobody is asked to approve`);
    t.deepEqual(acted(log), []);
  }
});

test('an escalation to the owner replaces "nobody to tell" with who is being told, and says the diagnosis went with it once delivered', async (t) => {
  const { ta, smtp } = await fixing(t, 'shadow');
  const id = await diagnosed(ta);
  let ep = await episode(ta, id);
  t.true(types(ep).includes('outcome.escalated'));
  t.is(ep.outcome, '');
  t.is(ep.outcome_detail.reason, `telling ${OWNER}, ${APPROVER}: not delivered yet`, 'not the opening’s "nobody to tell" any more');
  await ta.app.notifications.run();
  await smtp.message(1);
  ep = await episode(ta, id);
  t.is(ep.outcome, 'escalated');
  t.regex(ep.outcome_detail.reason, /^escalated to people with the diagnosis: told /);
  t.true(ep.diagnosis !== null);
});

test('a raise to L1 e-mails every other owner and admin that it waits for them; the digest names who approved it', async (t) => {
  const smtp = await startSmtp(t);
  const ta = await startApp(t, { env: { SERVICE_MAIL_CA_FILE: smtp.caFile, SERVICE_PUBLIC_URL: 'https://oncall.bank.example' } });
  await makeOperating(ta, OWNER);
  ok(await ta.call('PUT', '/v1/settings/mail', { body: { smtp_host: smtp.host, smtp_port: smtp.port, mail_from: 'oncall@bank.example' } }));
  const alice = await signedIn(ta, 'alice@bank.example', 'admin');
  const bob = await signedIn(ta, 'bob@bank.example', 'admin');
  const carol = await signedIn(ta, 'carol@bank.example', 'admin');
  await signedIn(ta, 'viewer@bank.example', 'viewer');
  ok(await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name: 'Down', service: 'payments', severity: 'critical', status: 'firing' } }));
  const asked = await ta.call('POST', '/v1/autonomy', { token: alice, body: { service: 'payments', level: 'L1' } });
  t.is(asked.status, 202, JSON.stringify(asked.body));
  // Asking again finds the request open and tells nobody twice.
  t.is((await ta.call('POST', '/v1/autonomy', { token: alice, body: { service: 'payments', level: 'L1' } })).status, 202);
  await ta.app.governance.raiseMail!.idle();
  t.deepEqual(smtp.messages.map((m) => m.to[0]).sort(), ['bob@bank.example', 'carol@bank.example', OWNER].sort(), 'not the requester, not a viewer');
  const mail = smtp.messages[0]!;
  t.is(mail.subject, 'Approval needed: raise payments from shadow to L1');
  t.regex(mail.text, /^alice@bank\.example asks to raise the autonomy of payments from shadow to L1\./);
  t.regex(mail.text, /needs 2 approvals from owners or admins other than the requester/);
  t.regex(mail.text, /Decide: +https:\/\/oncall\.bank\.example\/control/);
  t.regex(mail.text, /because you are an owner or admin of this install, and your decision is asked for\./);
  const mailed = (await ta.call('GET', '/v1/ledger?type=governance.approval_mailed')).body.events as any[];
  t.is(mailed.length, 1);
  t.deepEqual([...mailed[0].data.to].sort(), ['bob@bank.example', 'carol@bank.example', OWNER].sort());

  const request = asked.body.pending.id as string;
  ok(await ta.call('POST', `/v1/approvals/${request}/approve`, { token: bob, body: {} }));
  ok(await ta.call('POST', `/v1/approvals/${request}/approve`, { token: carol, body: {} }));
  ta.clock.advance(SECOND);
  const digest = (await ta.call('GET', '/v1/digest')).body;
  t.like(digest.governance.autonomy_changes[0], { service: 'payments', from: 'shadow', to: 'L1', by: 'alice@bank.example' });
  t.deepEqual(digest.governance.autonomy_changes[0].approved_by, ['bob@bank.example', 'carol@bank.example']);
  t.regex(digest.markdown, /payments from shadow to L1 by alice@bank\.example, approved by bob@bank\.example and carol@bank\.example: /);
});

test('after the resume, the fix the halt held back is proposed again; the refusal is on the episode’s trace', async (t) => {
  const { ta, log, approver } = await fixing(t, 'L1');
  const id = await diagnosed(ta);
  const first = (await episode(ta, id)).approvals[0].id as string;
  ok(await ta.call('POST', '/v1/halt', { body: { by: OWNER, reason: 'change freeze' } }));
  ok(await ta.call('POST', `/v1/approvals/${first}/approve`, { token: approver, body: {} }));
  await ta.app.acting.acting.run();
  await ta.app.governance.gate.idle();
  let ep = await episode(ta, id);
  t.is(ep.path_state, 'done');
  t.deepEqual(acted(log), []);
  // The refusal is the episode's: in its timeline and under its trace.
  t.true(types(ep).includes('action.refused'));
  const traced = (await ta.call('GET', `/v1/ledger?trace=${id}&type=action.refused`)).body.events as any[];
  t.is(traced.length, 1);
  t.like(traced[0].data, { refused: 'halted', service: 'jobs' });

  // Still halted: nothing is proposed again.
  await ta.app.acting.acting.run();
  t.false(types(await episode(ta, id)).includes('decision.reproposed'));
  ok(await ta.call('POST', '/v1/resume', { body: { by: OWNER } }));
  await ta.app.acting.acting.run();
  ep = await episode(ta, id);
  t.true(types(ep).includes('decision.reproposed'));
  t.is(ep.path_state, 'awaiting_approval', `a new request for the same fix ${ta.logs.filter((l) => /"level":50/.test(l)).join('\n')}`);
  const second = ep.approvals[0].id as string;
  t.not(second, first);
  ok(await ta.call('POST', `/v1/approvals/${second}/approve`, { token: approver, body: {} }));
  await ta.app.acting.acting.run();
  t.is(acted(log).length, 1, 'the fix runs once approved again');
  t.is((await ta.call('GET', `/v1/ledger?type=decision.reproposed`)).body.events.length, 1, 'once');
  t.true((await ta.app.verifyLedger()).ok);
});

test('an incident that closed during the halt is not proposed again after the resume', async (t) => {
  const { ta } = await fixing(t, 'L1');
  ok(await ta.call('POST', '/v1/halt', { body: { by: OWNER, reason: 'change freeze' } }));
  const id = await diagnosed(ta);
  let ep = await episode(ta, id);
  t.is(ep.path_state, 'done');
  t.regex(ep.policy_decision.reason, /^halted: /);
  ok(await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: stuck('critical', 'resolved') }));
  await ta.app.episodes.process();
  ok(await ta.call('POST', '/v1/resume', { body: { by: OWNER } }));
  await ta.app.acting.acting.run();
  ep = await episode(ta, id);
  t.is(ep.state, 'closed');
  t.false(types(ep).includes('decision.reproposed'));
  t.is(ep.path_state, 'done');
  t.deepEqual(await ta.app.db('action_paths').whereNotNull('held_by_halt').select('episode_id'), [], 'nothing is left held');
});
