import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { HOUR, MINUTE } from '../../host/clock.ts';
import { AutonomyRepo } from '../../host/governance/autonomy.repo.ts';
import { AutonomyService } from '../../host/governance/autonomy.service.ts';
import { defaultPolicy } from '../../host/policy/policy.schema.ts';
import { ADMIN_TOKEN, INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { breakGlass, signedIn } from '../helpers/people.ts';

type T = Parameters<typeof startApp>[0];

async function operating(t: T, opts: Parameters<typeof startApp>[1] = {}): Promise<TestApp> {
  const ta = await startApp(t, opts);
  await makeOperating(ta);
  return ta;
}

/** An alert naming `service`, so the service is known. */
async function known(ta: TestApp, service = 'payments'): Promise<void> {
  const res = await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name: `X-${service}`, service, severity: 'critical' } });
  if (res.status !== 202) throw new Error(`push: ${JSON.stringify(res.body)}`);
}

const events = async (ta: TestApp, type: string) => (await ta.call('GET', `/v1/ledger?type=${type}&order=asc`)).body.events as any[];
const overview = async (ta: TestApp) => (await ta.call('GET', '/v1/autonomy')).body;
const entry = async (ta: TestApp, service = 'payments') => (await overview(ta)).services.find((s: any) => s.service === service);
const setLevel = (ta: TestApp, body: Record<string, unknown>, token?: string) => ta.call('POST', '/v1/autonomy', { token, body });
const decide = (ta: TestApp, id: string, how: 'approve' | 'reject', token: string, body: unknown = {}) =>
  ta.call('POST', `/v1/approvals/${id}/${how}`, { token, body });
const approvals = async (ta: TestApp) => (await ta.call('GET', '/v1/approvals')).body.approvals as any[];
/** Row counts of the governance tables: nothing half-written after a refusal. */
const counts = async (ta: TestApp) => ({
  levels: (await ta.app.db('autonomy_levels').select()).length,
  requests: (await ta.app.db('approval_requests').select()).length,
  decisions: (await ta.app.db('approval_decisions').select()).length,
  head: (await ta.app.ledger.head()).seq,
});

/** An operating app that knows `payments`, with two admins signed in. */
async function setup(t: T, opts: Parameters<typeof startApp>[1] = {}) {
  const ta = await operating(t, opts);
  await known(ta);
  const alice = await signedIn(ta, 'alice@bank.example', 'admin');
  const bob = await signedIn(ta, 'bob@bank.example', 'admin');
  const carol = await signedIn(ta, 'carol@bank.example', 'admin');
  return { ta, alice, bob, carol };
}

test('GET /v1/autonomy: 503 before operating, 401 without a token; lists services known from alerts at shadow, with readiness', async (t) => {
  const ta = await startApp(t);
  t.is((await ta.call('GET', '/v1/autonomy')).status, 503);
  await makeOperating(ta);
  t.is((await ta.call('GET', '/v1/autonomy', { token: null })).status, 401);
  t.deepEqual(await overview(ta), {
    halted: false,
    halt: null,
    services: [],
    file: { state: 'none', sha256: null, problem: null, read_at: '2026-06-01T00:00:00.000Z', in_force: null },
  });
  await known(ta);
  const o = await overview(ta);
  t.is(o.services.length, 1);
  t.like(o.services[0], { service: 'payments', level: 'shadow', pending: null });
  t.is(o.services[0].readiness.length, 3);
  t.regex(o.services[0].readiness.join(' '), /connector/);
  t.regex(o.services[0].readiness.join(' '), /studied/);
  t.regex(o.services[0].readiness.join(' '), /owner/);
});

test('a lower level takes effect at once, with an event naming the person; the same level changes nothing', async (t) => {
  const { ta, alice } = await setup(t);
  const res = await setLevel(ta, { service: 'payments', level: 'off', by: 'ignored@bank.example' }, alice);
  t.is(res.status, 202);
  t.like(res.body, { service: 'payments', level: 'off', changed: true, pending: null });
  t.like(await entry(ta), { level: 'off' });
  const [ev, ...rest] = await events(ta, 'governance.autonomy_changed');
  t.is(rest.length, 0);
  t.is(ev.actor, 'alice@bank.example', 'with a session the person is recorded and a supplied by ignored');
  t.like(ev.data, { service: 'payments', from: 'shadow', to: 'off', request_id: null, by: 'alice@bank.example' });
  const again = await setLevel(ta, { service: 'payments', level: 'off' }, alice);
  t.like(again.body, { level: 'off', changed: false });
  t.is((await events(ta, 'governance.autonomy_changed')).length, 1);
  // off → shadow is a raise, but not to a level that acts: at once.
  t.like((await setLevel(ta, { service: 'payments', level: 'shadow' }, alice)).body, { level: 'shadow', changed: true });
  t.true((await ta.app.verifyLedger()).ok);
});

test('a raise to L1 waits for two approvers, neither the requester; the second approval changes the level in its transaction', async (t) => {
  const { ta, alice, bob, carol } = await setup(t);
  const raised = await setLevel(ta, { service: 'payments', level: 'L1' }, alice);
  t.is(raised.status, 202);
  t.like(raised.body, { service: 'payments', level: 'shadow', changed: false });
  const pending = raised.body.pending;
  t.like(pending, { level: 'L1', requested_by: 'alice@bank.example' });
  t.like(await entry(ta), { level: 'shadow', pending });

  const [req] = await approvals(ta);
  t.like(req, {
    id: pending.id,
    kind: 'autonomy_raise',
    state: 'pending',
    service: 'payments',
    from: 'shadow',
    to: 'L1',
    requested_by: 'alice@bank.example',
    requested_actor: 'alice@bank.example',
    decisions: [],
  });

  const own = await decide(ta, pending.id, 'approve', alice);
  t.is(own.status, 403);
  t.is(own.body.error, 'own_request');

  const first = await decide(ta, pending.id, 'approve', bob, { note: 'looks fine' });
  t.is(first.status, 200);
  t.like(first.body.approval, { state: 'pending' });
  const twice = await decide(ta, pending.id, 'approve', bob);
  t.is(twice.status, 409, 'the same approver counts once');
  t.is(twice.body.error, 'already_decided');
  t.like(await entry(ta), { level: 'shadow' });

  const second = await decide(ta, pending.id, 'approve', carol);
  t.is(second.status, 200);
  t.like(second.body.approval, { state: 'approved' });
  t.deepEqual(
    second.body.approval.decisions.map((d: any) => [d.by, d.decision, d.note]),
    [
      ['bob@bank.example', 'approve', 'looks fine'],
      ['carol@bank.example', 'approve', null],
    ],
  );
  t.like(await entry(ta), { level: 'L1', pending: null });

  const closed = await decide(ta, pending.id, 'reject', carol);
  t.is(closed.status, 409);
  t.is(closed.body.error, 'approval_closed');

  t.is((await events(ta, 'governance.approval_requested')).length, 1);
  t.deepEqual(
    (await events(ta, 'governance.approval_decided')).map((e) => [e.actor, e.data.decision, e.data.state]),
    [
      ['bob@bank.example', 'approve', 'pending'],
      ['carol@bank.example', 'approve', 'approved'],
    ],
  );
  const [changed] = await events(ta, 'governance.autonomy_changed');
  t.like(changed, { actor: 'carol@bank.example' });
  t.like(changed.data, { service: 'payments', from: 'shadow', to: 'L1', request_id: pending.id });
  // Lowering from L1 is immediate again.
  t.like((await setLevel(ta, { service: 'payments', level: 'shadow' }, bob)).body, { level: 'shadow', changed: true });
  t.true((await ta.app.verifyLedger()).ok);
});

test('one rejection ends a request; the level stays', async (t) => {
  const { ta, alice, bob, carol } = await setup(t);
  const { pending } = (await setLevel(ta, { service: 'payments', level: 'L1' }, alice)).body;
  t.is((await decide(ta, pending.id, 'approve', bob)).status, 200);
  const rejected = await decide(ta, pending.id, 'reject', carol, { note: 'not before the freeze' });
  t.is(rejected.status, 200);
  t.like(rejected.body.approval, { state: 'rejected' });
  t.is((await decide(ta, pending.id, 'approve', ADMIN_TOKEN)).status, 409);
  t.like(await entry(ta), { level: 'shadow', pending: null });
  // A new raise opens a new request.
  const again = (await setLevel(ta, { service: 'payments', level: 'L1' }, alice)).body;
  t.not(again.pending.id, pending.id);
});

test('a request expires after 24 hours: in the tick, and when decided late', async (t) => {
  const { ta, alice } = await setup(t);
  await known(ta, 'ledger');
  const a = (await setLevel(ta, { service: 'payments', level: 'L1' }, alice)).body.pending;
  const b = (await setLevel(ta, { service: 'ledger', level: 'L1' }, alice)).body.pending;
  ta.clock.advance(24 * HOUR - MINUTE);
  await ta.app.tick();
  t.like(
    (await approvals(ta)).find((r) => r.id === a.id),
    { state: 'pending' },
  );
  const bob = await signedIn(ta, 'bob@bank.example', 'admin'); // sessions end after 12 idle hours
  t.is((await decide(ta, a.id, 'approve', bob)).status, 200);
  ta.clock.advance(MINUTE);
  // Decided late, before any tick: expired, and the expiry is kept.
  const late = await decide(ta, b.id, 'approve', bob);
  t.is(late.status, 409);
  t.is(late.body.error, 'approval_closed');
  t.like(
    (await approvals(ta)).find((r) => r.id === b.id),
    { state: 'expired' },
  );
  await ta.app.tick();
  t.like(
    (await approvals(ta)).find((r) => r.id === a.id),
    { state: 'expired' },
  );
  t.deepEqual((await events(ta, 'governance.approval_expired')).map((e) => e.data.request_id).sort(), [a.id, b.id].sort());
  t.like(await entry(ta), { level: 'shadow', pending: null });
  await ta.app.tick();
  t.is((await events(ta, 'governance.approval_expired')).length, 2, 'expired once');
});

test('L2 and unknown levels are 400 level_not_allowed; unknown services 404; bad bodies 400; nothing written', async (t) => {
  const { ta, alice } = await setup(t);
  const before = await counts(ta);
  for (const level of ['L2', 'L3', 'high']) {
    const res = await setLevel(ta, { service: 'payments', level }, alice);
    t.is(res.status, 400, level);
    t.is(res.body.error, 'level_not_allowed');
  }
  const unknown = await setLevel(ta, { service: 'nowhere', level: 'off' }, alice);
  t.is(unknown.status, 404);
  t.is(unknown.body.error, 'unknown_service');
  for (const body of [
    { service: 'payments' },
    { service: 'payments', level: 'off', extra: 1 },
    { service: '', level: 'off' },
    { service: 'payments', level: 1 },
    'not json',
  ]) {
    const res = await setLevel(ta, body as any, alice);
    t.is(res.status, 400, JSON.stringify(body));
  }
  const longNote = await decide(ta, 'x', 'approve', alice, { note: 'n'.repeat(1001) });
  t.is(longNote.status, 400);
  t.is((await decide(ta, 'no-such-id', 'approve', alice)).status, 404);
  t.is((await ta.call('POST', '/v1/halt', { token: alice, body: { reason: '' } })).status, 400);
  t.is((await ta.call('POST', '/v1/halt', { token: alice, body: { reason: 'x'.repeat(1001) } })).status, 400);
  t.is((await ta.call('POST', '/v1/halt', { token: alice, body: { reason: 'r', extra: true } })).status, 400);
  t.is((await ta.call('POST', '/v1/resume', { token: alice, body: { extra: true } })).status, 400);
  t.is((await ta.call('GET', '/v1/approvals?state=open')).status, 400);
  t.deepEqual(await counts(ta), before);
  t.true((await ta.app.verifyLedger()).ok);
});

test('the admin token must say who asks (by_required); it counts as one approver and cannot approve what it asked', async (t) => {
  const { ta, alice, bob } = await setup(t);
  const before = await counts(ta);
  const missing = await setLevel(ta, { service: 'payments', level: 'off' });
  t.is(missing.status, 400);
  t.is(missing.body.error, 'by_required');
  t.is((await setLevel(ta, { service: 'payments', level: 'off', by: '  ' })).body.error, 'by_required');
  t.is((await ta.call('POST', '/v1/halt', { body: { reason: 'r' } })).body.error, 'by_required');
  t.is((await ta.call('POST', '/v1/resume', { body: {} })).body.error, 'by_required');
  t.deepEqual(await counts(ta), before);

  const low = await setLevel(ta, { service: 'payments', level: 'off', by: 'dave@bank.example' });
  t.is(low.status, 202);
  const [ev] = await events(ta, 'governance.autonomy_changed');
  t.like(ev, { actor: 'admin-token' });
  t.like(ev.data, { by: 'dave@bank.example' });

  // Raised with the admin token for dave: neither dave nor the admin token may approve it.
  const { pending } = (await setLevel(ta, { service: 'payments', level: 'L1', by: 'dave@bank.example' })).body;
  t.like(pending, { requested_by: 'dave@bank.example' });
  t.like((await ta.call('GET', '/v1/approvals?state=pending')).body.approvals[0], {
    id: pending.id,
    requested_by: 'dave@bank.example',
    requested_actor: 'admin-token',
  });
  t.is((await decide(ta, pending.id, 'approve', ADMIN_TOKEN)).body.error, 'own_request');
  const glass = await breakGlass(ta);
  t.is((await decide(ta, pending.id, 'approve', glass)).body.error, 'own_request', 'a break-glass session is the admin token');
  t.is((await decide(ta, pending.id, 'approve', alice)).status, 200);
  t.is((await decide(ta, pending.id, 'approve', bob)).status, 200);
  t.like(await entry(ta), { level: 'L1' });

  // Raised by alice: the admin token approves as `admin-token`, one approver.
  await setLevel(ta, { service: 'payments', level: 'shadow' }, alice);
  const second = (await setLevel(ta, { service: 'payments', level: 'L1' }, alice)).body.pending;
  const byToken = await decide(ta, second.id, 'approve', ADMIN_TOKEN);
  t.is(byToken.status, 200);
  t.deepEqual(
    byToken.body.approval.decisions.map((d: any) => d.by),
    ['admin-token'],
  );
  t.is((await decide(ta, second.id, 'approve', glass)).body.error, 'already_decided', 'break-glass and the token are one approver');
  t.like((await decide(ta, second.id, 'approve', bob)).body.approval, { state: 'approved' });
});

test('two concurrent raises of one service make one request', async (t) => {
  const { ta, alice, bob } = await setup(t);
  const [a, b] = await Promise.all([setLevel(ta, { service: 'payments', level: 'L1' }, alice), setLevel(ta, { service: 'payments', level: 'L1' }, bob)]);
  t.is(a.status, 202);
  t.is(b.status, 202);
  t.is(a.body.pending.id, b.body.pending.id);
  t.is((await approvals(ta)).length, 1);
  t.is((await events(ta, 'governance.approval_requested')).length, 1);
  const many = await Promise.all(Array.from({ length: 6 }, () => setLevel(ta, { service: 'payments', level: 'L1', by: 'x@bank.example' })));
  t.deepEqual([...new Set(many.map((r) => r.body.pending.id))], [a.body.pending.id]);
  t.is((await approvals(ta)).length, 1);
});

test('viewers read autonomy and approvals but change nothing', async (t) => {
  const { ta, alice } = await setup(t);
  const viewer = await signedIn(ta, 'vera@bank.example', 'viewer');
  const { pending } = (await setLevel(ta, { service: 'payments', level: 'L1' }, alice)).body;
  // The raise's e-mail to the other owners and admins is recorded once sent (governance.approval_mailed).
  await ta.app.governance.raiseMail?.idle();
  const before = await counts(ta);
  t.is((await ta.call('GET', '/v1/autonomy', { token: viewer })).status, 200);
  t.is((await ta.call('GET', '/v1/approvals', { token: viewer })).status, 200);
  t.is((await setLevel(ta, { service: 'payments', level: 'off' }, viewer)).status, 403);
  t.is((await decide(ta, pending.id, 'approve', viewer)).status, 403);
  t.is((await decide(ta, pending.id, 'reject', viewer)).status, 403);
  t.is((await ta.call('POST', '/v1/halt', { token: viewer, body: { reason: 'r' } })).status, 403);
  t.is((await ta.call('POST', '/v1/resume', { token: viewer, body: {} })).status, 403);
  t.deepEqual(await counts(ta), before);
  t.false((await overview(ta)).halted);
});

test('halt and resume: events with the person and reason; idempotent; a raise while halted is still recorded', async (t) => {
  const { ta, alice, bob, carol } = await setup(t);
  const halted = await ta.call('POST', '/v1/halt', { token: alice, body: { by: 'ignored', reason: 'bad deploy in progress' } });
  t.is(halted.status, 200);
  t.like(halted.body, { halted: true, changed: true, halt: { by: 'alice@bank.example', reason: 'bad deploy in progress' } });
  const o = await overview(ta);
  t.true(o.halted);
  t.like(o.halt, { by: 'alice@bank.example', reason: 'bad deploy in progress', at: ta.clock.now().toISOString() });
  const again = await ta.call('POST', '/v1/halt', { token: bob, body: { reason: 'me too' } });
  t.like(again.body, { halted: true, changed: false, halt: { by: 'alice@bank.example' } });

  // Decisions go on while halted.
  const { pending } = (await setLevel(ta, { service: 'payments', level: 'L1' }, alice)).body;
  t.truthy(pending);
  t.is((await approvals(ta)).length, 1);
  await decide(ta, pending.id, 'approve', bob);
  await decide(ta, pending.id, 'approve', carol);
  t.like(await entry(ta), { level: 'L1' });

  const resumed = await ta.call('POST', '/v1/resume', { body: { by: 'dave@bank.example' } });
  t.is(resumed.status, 200);
  t.like(resumed.body, { halted: false, halt: null, changed: true });
  t.like((await ta.call('POST', '/v1/resume', { token: bob, body: {} })).body, { halted: false, changed: false });
  const h = await events(ta, 'governance.halted');
  t.is(h.length, 1);
  t.like(h[0], { actor: 'alice@bank.example', reason: 'bad deploy in progress' });
  const r = await events(ta, 'governance.resumed');
  t.is(r.length, 1);
  t.like(r[0], { actor: 'admin-token' });
  t.like(r[0].data, { by: 'dave@bank.example', halted_reason: 'bad deploy in progress' });
  t.false((await overview(ta)).halted);
  t.true((await ta.app.verifyLedger()).ok);
});

test('the halt survives a restart', async (t) => {
  const first = await operating(t, { keepStore: true });
  t.teardown(() => first.store.cleanup());
  t.is((await first.call('POST', '/v1/halt', { body: { by: 'dave@bank.example', reason: 'storm' } })).status, 200);
  await first.app.close();
  const second = await startApp(t, { store: first.store, clock: first.clock });
  const o = await overview(second);
  t.true(o.halted);
  t.like(o.halt, { by: 'dave@bank.example', reason: 'storm' });
  await t.throwsAsync(second.app.governance.gate.authorise(undefined, { service: 'payments', kind: 'restart' }), { message: /halted/ });
});

/** Raises payments to L1: asked with the admin token for `ops`, approved by two admins. */
async function raiseToL1(ta: TestApp, a: string, b: string): Promise<void> {
  const raised = await setLevel(ta, { service: 'payments', level: 'L1', by: 'ops@bank.example' });
  const id = raised.body.pending.id as string;
  await decide(ta, id, 'approve', a);
  await decide(ta, id, 'approve', b);
}

test('the action gate: an action approved before the halt is refused after it, and allowed after resume', async (t) => {
  const { ta, alice, bob } = await setup(t);
  const gate = ta.app.governance.gate;
  await raiseToL1(ta, alice, bob);
  const asked = await ta.app.governance.approvals.requestAction('payments', 'restart', 'restart payments-api pods', 'system');
  t.like(asked, { kind: 'action', state: 'pending', service: 'payments', action: 'restart' });
  // Not yet approved: refused.
  await t.throwsAsync(gate.authorise(undefined, { service: 'payments', kind: 'restart', approvalId: asked.id }), { message: /pending/ });
  t.is((await decide(ta, asked.id, 'approve', alice)).status, 200);
  t.like((await decide(ta, asked.id, 'approve', bob)).body.approval, { state: 'approved' });
  await t.notThrowsAsync(gate.authorise(undefined, { service: 'payments', kind: 'restart', approvalId: asked.id }));
  // The wrong service or kind is refused even when approved.
  await t.throwsAsync(gate.authorise(undefined, { service: 'payments', kind: 'scale', approvalId: asked.id }), { message: /for restart, not scale/ });

  t.is((await ta.call('POST', '/v1/halt', { token: alice, body: { reason: 'freeze' } })).status, 200);
  const err = await t.throwsAsync(gate.authorise(undefined, { service: 'payments', kind: 'restart', approvalId: asked.id }));
  t.is((err as any).code, 'halted');
  t.is((err as any).status, 409);
  // Inside a caller's transaction too; its refusal is written once that transaction is over.
  await t.throwsAsync(
    ta.app.db.transaction((trx) => gate.authorise(trx, { service: 'payments', kind: 'scale' })),
    { message: /halted/ },
  );
  await gate.idle();
  const refused = await events(ta, 'action.refused');
  t.deepEqual(
    refused.map((e) => e.data.refused),
    ['action_not_approved', 'action_not_approved', 'halted', 'halted'],
  );
  t.like(refused[2].data, { service: 'payments', kind: 'restart', approval_id: asked.id, halt_reason: 'freeze' });
  t.regex(refused[2].reason, /freeze/);

  t.is((await ta.call('POST', '/v1/resume', { token: bob, body: {} })).status, 200);
  await t.notThrowsAsync(gate.authorise(undefined, { service: 'payments', kind: 'restart', approvalId: asked.id }));
  await t.notThrowsAsync(ta.app.db.transaction((trx) => gate.authorise(trx, { service: 'payments', kind: 'restart', approvalId: asked.id })));
  const listed = (await approvals(ta)).find((r) => r.id === asked.id);
  t.like(listed, { kind: 'action', state: 'approved', requested_by: 'system' });
  t.true((await ta.app.verifyLedger()).ok);
});

test("the policy's default and ceilings: a raise above the ceiling is 400 naming it; lowering is never refused", async (t) => {
  const ta = await operating(t);
  await known(ta);
  const g = ta.app.governance;
  const autonomy = new AutonomyService({
    repo: new AutonomyRepo(ta.app.db),
    approvals: g.approvals,
    halt: g.halt,
    ledger: ta.app.ledger,
    clock: ta.clock,
    policy: { current: async () => ({ ...defaultPolicy(), default_autonomy: 'off' as const, ceilings: { payments: 'shadow' as const } }) },
    coverage: { covers: async (s) => s === 'payments' },
    known: { knownServices: async () => ['payments'] },
    file: { status: async () => ({ state: 'none' as const, sha256: null, problem: null, read_at: null, in_force: null }) },
  });
  const [entryOf] = (await autonomy.overview()).services;
  t.like(entryOf, { service: 'payments', level: 'off' });
  t.is(entryOf!.readiness.length, 2, 'a covering connector removes that sentence');
  const who = { actor: 'alice@bank.example', by: 'alice@bank.example' };
  const before = await counts(ta);
  const err = await t.throwsAsync(autonomy.set('payments', 'L1', who));
  t.is((err as any).code, 'level_not_allowed');
  t.regex(err!.message, /ceiling for payments is shadow/);
  t.deepEqual(await counts(ta), before);
  t.like(await autonomy.set('payments', 'shadow', who), { level: 'shadow', changed: true });
  t.like(await autonomy.set('payments', 'off', who), { level: 'off', changed: true });
});

test('readiness stops asking for a connector once one passes its check', async (t) => {
  const ta = await operating(t);
  await known(ta);
  const server = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;
  t.is((await ta.call('PUT', '/v1/connectors/web', { body: { kind: 'http', settings: { base_url: `http://127.0.0.1:${port}` } } })).status, 201);
  t.true((await ta.call('POST', '/v1/connectors/web/check')).body.state === 'ok');
  const readiness = (await entry(ta)).readiness as string[];
  t.is(readiness.length, 2);
  t.false(readiness.join(' ').includes('connector'));
});

test('the action gate follows the level and the policy: shadow never acts, L1 needs approval, L2 only safe kinds, freezes and the hourly cap', async (t) => {
  const { ta, alice, bob } = await setup(t);
  const gate = ta.app.governance.gate;
  const ask = { service: 'payments', kind: 'restart' };
  const code = async (p: Promise<void>) =>
    (
      (await p.then(
        () => null,
        (e: { code: string }) => e,
      )) as { code: string } | null
    )?.code ?? 'allowed';
  t.is(await code(gate.authorise(undefined, ask)), 'autonomy_too_low', 'shadow records only');
  await raiseToL1(ta, alice, bob);
  t.is(await code(gate.authorise(undefined, ask)), 'action_not_approved', 'L1 asks first');

  // L2 (not settable over the API): safe kinds run without asking, others still ask.
  await ta.app.db('autonomy_levels').update({ level: 'L2' }).where({ service: 'payments' });
  const policy = (p: Record<string, unknown>) => ta.call('PUT', '/v1/policy', { body: { ...defaultPolicy(), ...p } });
  t.is((await policy({ safe_for_l2: ['restart'], max_actions_per_service_per_hour: 2 })).status, 200);
  t.is(await code(gate.authorise(undefined, ask)), 'allowed');
  t.is(await code(gate.authorise(undefined, { service: 'payments', kind: 'rollback' })), 'action_not_approved');

  // The hourly cap counts actions that ran.
  await gate.ran(undefined, ask);
  await gate.ran(undefined, ask);
  t.is(await code(gate.authorise(undefined, ask)), 'action_cap_reached');
  ta.clock.advance(HOUR + MINUTE);
  t.is(await code(gate.authorise(undefined, ask)), 'allowed', 'an hour later');

  // A change freeze refuses everything while it lasts.
  const now = ta.clock.now().getTime();
  const window = { name: 'quarter-end', start: new Date(now - MINUTE).toISOString(), end: new Date(now + HOUR).toISOString() };
  t.is((await policy({ safe_for_l2: ['restart'], freeze_windows: [window] })).status, 200);
  t.is(await code(gate.authorise(undefined, ask)), 'frozen');
  // Kinds that always need approval do, even when listed safe.
  t.is((await policy({ safe_for_l2: [], always_approve: ['restart'] })).status, 200);
  t.is(await code(gate.authorise(undefined, ask)), 'action_not_approved');
  const refused = (await events(ta, 'action.refused')).map((e) => e.data.refused);
  t.deepEqual(refused, ['autonomy_too_low', 'action_not_approved', 'action_not_approved', 'action_cap_reached', 'frozen', 'action_not_approved']);
});
