// Issue 22, item 5: one admin can no longer defeat the two-approver rule of a tier-1 service by
// rewriting its tier and approvers in the estate overrides. Lowering a tier, or changing who
// approves a tier-1 or tier-2 service, waits for two approvals (owners or admins other than the
// asker), as an autonomy raise does, and is recorded. SQLite, and MariaDB with TEST_DATABASE_URL.
import test, { type ExecutionContext } from 'ava';
import { guardedFields } from '../../host/estate/estate-guard.ts';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { signedIn } from '../helpers/people.ts';

async function setup(t: ExecutionContext): Promise<{ ta: TestApp; eve: string; frank: string; grace: string; viewer: string }> {
  const ta = await startApp(t);
  await makeOperating(ta);
  const [eve, frank, grace, viewer] = [
    await signedIn(ta, 'eve@bank.example', 'admin'),
    await signedIn(ta, 'frank@bank.example', 'admin'),
    await signedIn(ta, 'grace@bank.example', 'admin'),
    await signedIn(ta, 'alice@bank.example', 'viewer'),
  ];
  await signedIn(ta, 'bob@bank.example', 'viewer');
  const put = await ta.call('PUT', '/v1/estate/overrides', {
    body: {
      services: {
        payments: { owner: 'owner@bank.example', tier: 1, approvers: ['alice@bank.example', 'bob@bank.example'] },
        ledger: { owner: 'owner@bank.example', tier: 2 },
        search: { tier: 3, approvers: ['alice@bank.example'] },
      },
    },
  });
  if (put.status !== 200) throw new Error(JSON.stringify(put.body));
  return { ta, eve, frank, grace, viewer };
}

const put = (ta: TestApp, services: Record<string, unknown>, token?: string) => ta.call('PUT', '/v1/estate/overrides', { token, body: { services } });
const service = async (ta: TestApp, name: string) => (await ta.call('GET', `/v1/estate/services/${name}`)).body.service;
const events = async (ta: TestApp, type: string) => (await ta.call('GET', `/v1/ledger?type=${type}&order=asc&limit=2000`)).body.events as any[];

test('which changes wait: a lower tier, a removal, who approves a tier-1 or tier-2 service; not a raise, nor a tier-3 service approvers', (t) => {
  const one = { tier: 1, approvers: ['a@x', 'b@x'] };
  t.deepEqual(guardedFields(one, { ...one, tier: 2 }), { tier: { from: 1, to: 2 } });
  t.deepEqual(guardedFields(one, { approvers: one.approvers }), { tier: { from: 1, to: null } }, 'no tier counts as the least critical');
  t.deepEqual(guardedFields(one, null), { tier: { from: 1, to: null }, removed: true, approvers: { from: ['a@x', 'b@x'], to: [] } });
  t.deepEqual(guardedFields(one, { ...one, approvers: ['a@x'] }), { approvers: { from: ['a@x', 'b@x'], to: ['a@x'] } });
  t.is(guardedFields(one, { ...one, approvers: ['B@x', 'a@x'] }), null, 'the same people in another order or case');
  t.is(guardedFields({ tier: 3 }, { tier: 1, approvers: ['x@x'] }), null, 'raising never waits');
  t.is(guardedFields({ tier: 3, approvers: ['a@x'] }, { tier: 3, approvers: ['z@x'] }), null);
  t.deepEqual(guardedFields({ tier: 3 }, { tier: 4 }), { tier: { from: 3, to: 4 } });
  t.is(guardedFields({ tier: 4 }, null), null, 'removing a tier-4 service lowers nothing');
  // Without approvers the owner approves: changing the owner of a tier-2 service is changing who approves.
  t.deepEqual(guardedFields({ tier: 2, owner: 'o@x' }, { tier: 2, owner: 'eve@x' }), { approvers: { from: ['o@x'], to: ['eve@x'] } });
  t.is(guardedFields({ tier: 2, owner: 'o@x', approvers: ['a@x'] }, { tier: 2, owner: 'eve@x', approvers: ['a@x'] }), null);
});

test('one admin lowering a tier-1 service and making herself its approver waits for two other approvers; she cannot approve it; it is recorded', async (t) => {
  const { ta, eve, frank, grace, viewer } = await setup(t);
  const asked = await put(
    ta,
    { payments: { owner: 'owner@bank.example', tier: 3, approvers: ['eve@bank.example'] }, search: { tier: 3, team: 'search' } },
    eve,
  );
  t.is(asked.status, 202, JSON.stringify(asked.body));
  t.is(asked.body.asked.length, 1);
  t.deepEqual(asked.body.pending, [
    {
      service: 'payments',
      request_id: asked.body.asked[0],
      fields: { tier: { from: 1, to: 3 }, approvers: { from: ['alice@bank.example', 'bob@bank.example'], to: ['eve@bank.example'] } },
    },
  ]);
  // The rest of the PUT applied; payments is as it was.
  t.is((await service(ta, 'search')).team, 'search');
  t.like(await service(ta, 'payments'), { tier: 1, approvers: ['alice@bank.example', 'bob@bank.example'] });
  t.deepEqual((await ta.call('GET', '/v1/estate/overrides')).body.pending, asked.body.pending, 'GET shows what waits');

  const id = asked.body.asked[0] as string;
  const listed = (await ta.call('GET', '/v1/approvals?state=pending')).body.approvals.find((a: any) => a.id === id);
  t.like(listed, { kind: 'estate_change', service: 'payments', requested_by: 'eve@bank.example', approvals_needed: 2, approvers: null });
  t.deepEqual(listed.change.after, { owner: 'owner@bank.example', tier: 3, approvers: ['eve@bank.example'] });
  const requested = (await events(ta, 'governance.approval_requested')).find((e) => e.data.request_id === id);
  t.like(requested, { actor: 'eve@bank.example', data: { kind: 'estate_change', service: 'payments', needed: 2, change: { tier: { from: 1, to: 3 } } } });

  // Eve cannot approve her own change; a viewer (even one of its approvers) cannot decide it; one other admin is not enough.
  t.like((await ta.call('POST', `/v1/approvals/${id}/approve`, { token: eve })).body, { error: 'own_request' });
  t.is((await ta.call('POST', `/v1/approvals/${id}/approve`, { token: viewer })).status, 403);
  t.like((await ta.call('POST', `/v1/approvals/${id}/approve`, { token: frank })).body.approval, { state: 'pending' });
  t.like(await service(ta, 'payments'), { tier: 1 });
  // While it waits, nobody changes payments otherwise; other services are free.
  const meanwhile = await put(
    ta,
    { payments: { owner: 'owner@bank.example', tier: 1, approvers: ['alice@bank.example', 'bob@bank.example'], team: 'pay' } },
    frank,
  );
  t.is(meanwhile.status, 409);
  t.is(meanwhile.body.error, 'estate_change_pending');
  t.is((await put(ta, { search: { tier: 3, team: 'search-2' } }, frank)).status, 200);

  const second = await ta.call('POST', `/v1/approvals/${id}/approve`, { token: grace });
  t.like(second.body.approval, { state: 'approved' });
  t.like(await service(ta, 'payments'), { tier: 3, approvers: ['eve@bank.example'] });
  const applied = (await events(ta, 'estate.overrides_changed')).at(-1);
  t.like(applied, {
    actor: 'grace@bank.example',
    data: { via: 'api', request_id: id, by: 'eve@bank.example', diff: { changed: { payments: { tier: { from: 1, to: 3 } } } } },
  });
  t.deepEqual((await ta.call('GET', '/v1/estate/overrides')).body.pending, []);
  t.true((await ta.app.verifyLedger()).ok);
});

test('a rejection ends a waiting change and changes nothing; the service may then be changed again', async (t) => {
  const { ta, eve, frank } = await setup(t);
  const asked = await put(ta, { payments: null }, eve);
  t.is(asked.status, 202);
  t.like(asked.body.pending[0], { service: 'payments', fields: { removed: true } });
  t.like((await ta.call('POST', `/v1/approvals/${asked.body.asked[0]}/reject`, { token: frank })).body.approval, { state: 'rejected' });
  t.like(await service(ta, 'payments'), { tier: 1 });
  // Closed: the service may be changed again, and a new request be asked.
  t.is((await put(ta, { payments: null }, eve)).status, 202);
});

test('what does not weaken the rule applies at once: a raise, another tier-3 approver, a team; a tier-2 owner change without approvers waits', async (t) => {
  const { ta, eve } = await setup(t);
  t.is((await put(ta, { search: { tier: 1, approvers: ['bob@bank.example'] } }, eve)).status, 200);
  t.like(await service(ta, 'search'), { tier: 1, approvers: ['bob@bank.example'] });
  t.is(
    (await put(ta, { payments: { owner: 'owner@bank.example', tier: 1, approvers: ['alice@bank.example', 'bob@bank.example'], team: 'pay' } }, eve)).status,
    200,
  );
  const owner = await put(ta, { ledger: { owner: 'eve@bank.example', tier: 2 } }, eve);
  t.is(owner.status, 202);
  t.like(owner.body.pending[0], { service: 'ledger', fields: { approvers: { from: ['owner@bank.example'], to: ['eve@bank.example'] } } });
});

test('two guarded changes of one service at once make one request; the other answers 409', async (t) => {
  const { ta, eve, frank } = await setup(t);
  const [a, b] = await Promise.all([put(ta, { payments: { tier: 2, approvers: ['alice@bank.example'] } }, eve), put(ta, { payments: { tier: 4 } }, frank)]);
  t.deepEqual([a.status, b.status].sort(), [202, 409]);
  t.is((await ta.call('GET', '/v1/approvals?state=pending')).body.approvals.filter((r: any) => r.kind === 'estate_change').length, 1);
});
