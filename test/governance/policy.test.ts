import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { Ajv } from 'ajv';
import { TestClock } from '../../host/clock.ts';
import { DEFAULT_POLICY, type PolicyDocument } from '../../host/policy/policy.schema.ts';
import {
  ceilingOf,
  freezeAt,
  inFreeze,
  needsApproval,
  parsePolicy,
  PolicyService,
  policyDiff,
  safeForL2,
  type PolicyReader,
} from '../../host/policy/policy.service.ts';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { signedIn } from '../helpers/people.ts';

const VALID: PolicyDocument = {
  default_autonomy: 'off',
  ceilings: { payments: 'L1', 'search-api': 'L2', ledger: 'shadow' },
  safe_for_l2: ['restart_pod', 'scale_up'],
  always_approve: ['rollback_deploy'],
  freeze_windows: [{ name: 'year end', start: '2026-12-24T18:00:00Z', end: '2027-01-02T08:00:00Z' }],
  max_actions_per_service_per_hour: 10,
};

async function operating(t: ExecutionContext, env: Record<string, string | undefined> = {}): Promise<TestApp> {
  const ta = await startApp(t, { env });
  await makeOperating(ta);
  return ta;
}

function configDir(t: ExecutionContext, content: string | null): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-policy-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  if (content !== null) writeFileSync(path.join(dir, 'policy.json'), content);
  return dir;
}

async function policyEvents(ta: TestApp): Promise<any[]> {
  const res = await ta.call('GET', '/v1/ledger?type=config.policy_changed&order=asc&limit=2000');
  return res.body.events;
}

test('GET answers the default policy at version 0 before any change', async (t) => {
  const ta = await operating(t);
  const res = await ta.call('GET', '/v1/policy');
  t.is(res.status, 200);
  t.like(res.body, { ...DEFAULT_POLICY, version: 0, source: 'default', updated_at: null, updated_by: null });
  t.is(res.body.default_autonomy, 'shadow');
  t.is(res.body.max_actions_per_service_per_hour, 6);
  t.deepEqual(res.body.ceilings, {});
  t.is(res.body.problem, undefined);
  t.is(res.headers.get('etag'), '"0"');
});

test('GET and PUT answer 503 until operating; the schema does not need it', async (t) => {
  const ta = await startApp(t);
  t.is((await ta.call('GET', '/v1/policy')).body.error, 'not_operating');
  t.is((await ta.call('PUT', '/v1/policy', { body: VALID })).status, 503);
  const schema = await ta.call('GET', '/v1/policy/schema');
  t.is(schema.status, 200);
  t.is((await ta.call('GET', '/v1/policy/schema', { token: null })).status, 401);
  t.is((await ta.call('GET', '/v1/policy', { token: null })).status, 401);
});

test('PUT replaces the policy: version up by one, event with the diff, then nothing for a repeat', async (t) => {
  const ta = await operating(t);
  const put = await ta.call('PUT', '/v1/policy', { body: VALID });
  t.is(put.status, 200, JSON.stringify(put.body));
  t.like(put.body, { ...VALID, version: 1, source: 'console', updated_by: 'admin-token' });
  t.is(put.headers.get('etag'), '"1"');
  const got = await ta.call('GET', '/v1/policy');
  t.deepEqual(got.body, put.body);

  const changed = { ...VALID, default_autonomy: 'shadow', ceilings: { payments: 'L2', 'search-api': 'L2' }, max_actions_per_service_per_hour: 0 };
  const second = await ta.call('PUT', '/v1/policy', { body: changed });
  t.is(second.body.version, 2);
  t.is(second.body.max_actions_per_service_per_hour, 0);

  // The same body again is no change: same version, no event.
  const repeat = await ta.call('PUT', '/v1/policy', { body: changed });
  t.is(repeat.status, 200);
  t.is(repeat.body.version, 2);

  const events = await policyEvents(ta);
  t.is(events.length, 2);
  t.is(events[0].actor, 'admin-token');
  t.is(events[0].data.version, 1);
  t.deepEqual(events[0].data.diff.default_autonomy, { from: 'shadow', to: 'off' });
  t.deepEqual(events[0].data.diff.ceilings, [
    { service: 'ledger', from: null, to: 'shadow' },
    { service: 'payments', from: null, to: 'L1' },
    { service: 'search-api', from: null, to: 'L2' },
  ]);
  t.deepEqual(events[0].data.diff.safe_for_l2, { from: [], to: ['restart_pod', 'scale_up'] });
  t.deepEqual(events[1].data, {
    version: 2,
    source: 'console',
    diff: {
      default_autonomy: { from: 'off', to: 'shadow' },
      ceilings: [
        { service: 'ledger', from: 'shadow', to: null },
        { service: 'payments', from: 'L1', to: 'L2' },
      ],
      max_actions_per_service_per_hour: { from: 10, to: 0 },
    },
  });
  t.true((await ta.call('GET', '/v1/ledger/verify')).body.ok);
});

test('the published schema compiles in ajv, validates the default and the examples, and refuses a bad one', async (t) => {
  const ta = await operating(t);
  const res = await ta.call('GET', '/v1/policy/schema');
  t.is(res.status, 200);
  t.is(res.body.$schema, 'http://json-schema.org/draft-07/schema#');
  const validate = new Ajv({ strict: true, allErrors: true }).compile(res.body);
  t.true(validate(DEFAULT_POLICY), JSON.stringify(validate.errors));
  const { source, updated_at: _at, updated_by: _by, ...served } = (await ta.call('GET', '/v1/policy')).body;
  t.is(source, 'default');
  t.true(validate(served), JSON.stringify(validate.errors));
  t.true(validate(VALID));
  t.true(validate({ ...VALID, version: 4 }));
  t.false(validate({ ...VALID, default_autonomy: 'L1' }));
  t.false(validate({ ...VALID, extra: true }));
});

const INVALID: Array<[string, Record<string, unknown>, RegExp]> = [
  ['default_autonomy L1', { default_autonomy: 'L1' }, /^default_autonomy must be one of: off, shadow$/],
  ['default_autonomy L2', { default_autonomy: 'L2' }, /^default_autonomy must be one of: off, shadow$/],
  ['a bad ceiling level', { ceilings: { payments: 'L3' } }, /^ceilings\.payments must be one of: off, shadow, L1, L2$/],
  ['a bad service name', { ceilings: { 'has space': 'L1' } }, /^ceilings: "has space" is not a valid service name$/],
  [
    'a window ending before it starts',
    { freeze_windows: [{ name: 'x', start: '2026-12-24T18:00:00Z', end: '2026-12-24T08:00:00Z' }] },
    /^freeze_windows\.0\.end must be after its start$/,
  ],
  ['a window with equal ends', { freeze_windows: [{ name: 'x', start: '2026-12-24T18:00:00Z', end: '2026-12-24T18:00:00Z' }] }, /^freeze_windows\.0\.end/],
  [
    'a window not in UTC',
    { freeze_windows: [{ name: 'x', start: '2026-12-24T18:00:00+01:00', end: '2026-12-25T18:00:00Z' }] },
    /^freeze_windows\.0\.start must match pattern/,
  ],
  [
    'a window on a day that does not exist',
    { freeze_windows: [{ name: 'x', start: '2026-02-30T18:00:00Z', end: '2026-03-05T18:00:00Z' }] },
    /^freeze_windows\.0\.start is not a real time$/,
  ],
  ['a window without a name', { freeze_windows: [{ start: '2026-12-24T18:00:00Z', end: '2026-12-25T18:00:00Z' }] }, /^freeze_windows\.0: name is required$/],
  ['a negative cap', { max_actions_per_service_per_hour: -1 }, /^max_actions_per_service_per_hour must be >= 0$/],
  ['a cap over 1000', { max_actions_per_service_per_hour: 1001 }, /^max_actions_per_service_per_hour must be <= 1000$/],
  ['a fractional cap', { max_actions_per_service_per_hour: 1.5 }, /^max_actions_per_service_per_hour must be integer$/],
  ['an unknown field', { autonomy: 'L2' }, /^body: unknown field autonomy$/],
  ['a bad action kind', { safe_for_l2: ['Restart Pod'] }, /^safe_for_l2\.0 must match pattern/],
  ['a duplicate kind', { always_approve: ['a', 'a'] }, /^always_approve must NOT have duplicate items/],
  [
    'a kind both safe and always approved',
    { safe_for_l2: ['restart_pod'], always_approve: ['drop_table', 'restart_pod'] },
    /^always_approve\.1: restart_pod is also in safe_for_l2/,
  ],
];

test('each invalid field is refused with 400 naming it, and nothing is written', async (t) => {
  const ta = await operating(t);
  t.is((await ta.call('PUT', '/v1/policy', { body: VALID })).status, 200);
  for (const [what, change, message] of INVALID) {
    const res = await ta.call('PUT', '/v1/policy', { body: { ...VALID, ...change } });
    t.is(res.status, 400, what);
    t.is(res.body.error, 'invalid_body', what);
    t.regex(res.body.message, message, what);
  }
  const missing = { ...VALID } as Partial<PolicyDocument>;
  delete missing.ceilings;
  const res = await ta.call('PUT', '/v1/policy', { body: missing });
  t.is(res.body.message, 'body: ceilings is required');
  t.is((await ta.call('PUT', '/v1/policy', { body: '{"default_autonomy":' })).body.error, 'invalid_json');
  t.is((await ta.call('PUT', '/v1/policy', { body: [] })).status, 400);

  const after = await ta.call('GET', '/v1/policy');
  t.like(after.body, { ...VALID, version: 1 });
  t.is((await policyEvents(ta)).length, 1);
  t.true((await ta.call('GET', '/v1/ledger/verify')).body.ok);
});

test('a viewer can read the policy and the schema but not change it; an admin can', async (t) => {
  const ta = await operating(t);
  const viewer = await signedIn(ta, 'viewer@bank.example', 'viewer');
  const admin = await signedIn(ta, 'admin@bank.example', 'admin');
  t.is((await ta.call('GET', '/v1/policy', { token: viewer })).status, 200);
  t.is((await ta.call('GET', '/v1/policy/schema', { token: viewer })).status, 200);
  const refused = await ta.call('PUT', '/v1/policy', { token: viewer, body: VALID });
  t.is(refused.status, 403);
  t.is(refused.body.error, 'forbidden');
  const done = await ta.call('PUT', '/v1/policy', { token: admin, body: VALID });
  t.is(done.status, 200);
  t.is(done.body.updated_by, 'admin@bank.example');
  const events = await policyEvents(ta);
  t.is(events.length, 1);
  t.is(events[0].actor, 'admin@bank.example');
});

test('optimistic concurrency: a stale version or If-Match is refused with 409 and changes nothing', async (t) => {
  const ta = await operating(t);
  t.is((await ta.call('PUT', '/v1/policy', { body: { ...VALID, version: 0 } })).body.version, 1);
  const stale = await ta.call('PUT', '/v1/policy', { body: { ...VALID, max_actions_per_service_per_hour: 3, version: 0 } });
  t.is(stale.status, 409);
  t.is(stale.body.error, 'policy_version_conflict');
  const res = await fetch(`${ta.base}/v1/policy`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ta.env.SERVICE_ADMIN_TOKEN}`, 'content-type': 'application/json', 'if-match': '"0"' },
    body: JSON.stringify({ ...VALID, max_actions_per_service_per_hour: 3 }),
  });
  t.is(res.status, 409);
  const ok = await fetch(`${ta.base}/v1/policy`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ta.env.SERVICE_ADMIN_TOKEN}`, 'content-type': 'application/json', 'if-match': 'W/"1"' },
    body: JSON.stringify({ ...VALID, max_actions_per_service_per_hour: 3 }),
  });
  t.is(ok.status, 200);
  t.is(((await ok.json()) as { version: number }).version, 2);
  t.is((await ta.call('GET', '/v1/policy')).body.max_actions_per_service_per_hour, 3);
});

test('concurrent PUTs get distinct versions, one event each', async (t) => {
  const ta = await operating(t);
  const caps = [1, 2, 3, 4, 5, 7, 8, 9];
  const results = await Promise.all(caps.map((cap) => ta.call('PUT', '/v1/policy', { body: { ...VALID, max_actions_per_service_per_hour: cap } })));
  for (const r of results) t.is(r.status, 200, JSON.stringify(r.body));
  t.deepEqual(
    results.map((r) => r.body.version).sort((a, b) => a - b),
    [1, 2, 3, 4, 5, 6, 7, 8],
  );
  const events = await policyEvents(ta);
  t.deepEqual(
    events.map((e) => e.data.version),
    [1, 2, 3, 4, 5, 6, 7, 8],
  );
  const last = results.find((r) => r.body.version === 8)!;
  t.is((await ta.call('GET', '/v1/policy')).body.max_actions_per_service_per_hour, last.body.max_actions_per_service_per_hour);
  t.true((await ta.call('GET', '/v1/ledger/verify')).body.ok);
});

test('a policy.json in SERVICE_CONFIG_DIR manages the policy: GET shows it from the file, PUT is 409', async (t) => {
  const dir = configDir(t, JSON.stringify({ ...VALID, version: 99 }));
  const ta = await operating(t, { SERVICE_CONFIG_DIR: dir });
  const got = await ta.call('GET', '/v1/policy');
  t.is(got.status, 200);
  t.like(got.body, { ...VALID, source: 'file', version: 1, updated_by: 'system' });
  t.is(got.body.problem, undefined);
  const put = await ta.call('PUT', '/v1/policy', { body: { ...VALID, default_autonomy: 'shadow' } });
  t.is(put.status, 409);
  t.is(put.body.error, 'policy_file_managed');
  t.is((await ta.call('PUT', '/v1/policy', { body: 'not json' })).body.error, 'policy_file_managed');
  const events = await policyEvents(ta);
  t.is(events.length, 1);
  t.like(events[0], { actor: 'system', data: { version: 1, source: 'file' } });
  t.deepEqual(events[0].data.diff.default_autonomy, { from: 'shadow', to: 'off' });
});

test('a restart with the same file records nothing new; a changed file is a new version', async (t) => {
  const dir = configDir(t, JSON.stringify(VALID));
  const first = await startApp(t, { env: { SERVICE_CONFIG_DIR: dir }, keepStore: true });
  t.teardown(() => first.store.cleanup());
  await makeOperating(first);
  await first.app.close();
  const again = await startApp(t, { env: { SERVICE_CONFIG_DIR: dir }, store: first.store });
  t.is((await again.call('GET', '/v1/policy')).body.version, 1);
  await again.app.close();
  writeFileSync(path.join(dir, 'policy.json'), JSON.stringify({ ...VALID, max_actions_per_service_per_hour: 2 }));
  const changed = await startApp(t, { env: { SERVICE_CONFIG_DIR: dir }, store: first.store });
  const got = await changed.call('GET', '/v1/policy');
  t.like(got.body, { version: 2, source: 'file', max_actions_per_service_per_hour: 2 });
  const events = await policyEvents(changed);
  t.deepEqual(
    events.map((e) => e.data.diff),
    [events[0].data.diff, { max_actions_per_service_per_hour: { from: 10, to: 2 } }],
  );
  t.true((await changed.call('GET', '/v1/ledger/verify')).body.ok);
});

for (const [what, content] of [
  ['not JSON', '{"default_autonomy": '],
  ['an invalid policy', JSON.stringify({ ...VALID, default_autonomy: 'L2' })],
] as const) {
  test(`a policy.json that is ${what} does not stop the start: the default is in force with a problem`, async (t) => {
    const dir = configDir(t, content);
    const ta = await operating(t, { SERVICE_CONFIG_DIR: dir });
    const got = await ta.call('GET', '/v1/policy');
    t.is(got.status, 200);
    t.like(got.body, { ...DEFAULT_POLICY, source: 'file' });
    t.regex(got.body.problem, /^policy\.json is not (valid JSON|a valid policy: default_autonomy must be one of: off, shadow)/);
    t.is((await ta.call('PUT', '/v1/policy', { body: VALID })).status, 409);
    const reported = await ta.call('GET', '/v1/ledger?type=system.policy_file_invalid');
    t.is(reported.body.events.length, 1);
    t.true(ta.logs.some((l) => l.includes('the default policy is in force')));
    t.true((await ta.call('GET', '/v1/ledger/verify')).body.ok);
  });
}

test('a file-managed invalid policy replaces a stored console policy with the default, recorded', async (t) => {
  const first = await startApp(t, { keepStore: true });
  t.teardown(() => first.store.cleanup());
  await makeOperating(first);
  t.is((await first.call('PUT', '/v1/policy', { body: VALID })).body.version, 1);
  await first.app.close();
  const dir = configDir(t, '[]');
  const ta = await startApp(t, { env: { SERVICE_CONFIG_DIR: dir }, store: first.store });
  const got = await ta.call('GET', '/v1/policy');
  t.like(got.body, { ...DEFAULT_POLICY, source: 'file', version: 2 });
  t.truthy(got.body.problem);
  const events = await policyEvents(ta);
  t.deepEqual(events[1].data.diff.default_autonomy, { from: 'off', to: 'shadow' });
});

test('helpers: freeze windows, approval, L2 safety, ceilings, and the PolicyReader shape', async (t) => {
  const policy = parsePolicy(VALID);
  t.false(inFreeze(policy, new Date('2026-12-24T17:59:59.999Z')));
  t.true(inFreeze(policy, new Date('2026-12-24T18:00:00Z')));
  t.is(freezeAt(policy, new Date('2026-12-31T00:00:00Z'))?.name, 'year end');
  t.false(inFreeze(policy, new Date('2027-01-02T08:00:00Z')));
  t.true(needsApproval(policy, 'rollback_deploy'));
  t.false(needsApproval(policy, 'restart_pod'));
  t.true(safeForL2(policy, 'restart_pod'));
  t.false(safeForL2(policy, 'rollback_deploy'));
  t.false(safeForL2(policy, 'delete_volume'));
  // always_approve wins should a stored document ever list a kind in both.
  t.false(safeForL2({ safe_for_l2: ['x'], always_approve: ['x'] }, 'x'));
  t.is(ceilingOf(policy, 'payments'), 'L1');
  t.is(ceilingOf(policy, 'unknown'), 'L2');
  t.is(ceilingOf(policy, 'constructor'), 'L2');
  t.deepEqual(policyDiff(policy, { ...policy, safe_for_l2: ['scale_up', 'restart_pod'] }), {});
  t.deepEqual(policyDiff(policy, { ...policy, ceilings: { ...policy.ceilings, constructor: 'L1' as const } }), {
    ceilings: [{ service: 'constructor', from: null, to: 'L1' }],
  });

  const ta = await operating(t);
  t.is((await ta.call('PUT', '/v1/policy', { body: VALID })).status, 200);
  const clock = new TestClock('2026-12-25T00:00:00Z');
  const service = new PolicyService({
    settings: new (await import('../../host/settings/settings.repo.ts')).SettingsRepo(ta.app.db),
    ledger: ta.app.ledger,
    clock,
    log: ta.app.log,
    configDir: null,
  });
  const reader: PolicyReader = service;
  const current = await reader.current();
  t.is(current.default_autonomy, 'off');
  t.deepEqual(current.ceilings, VALID.ceilings);
  t.true(await service.inFreeze());
  t.false(await service.inFreeze(new Date('2027-02-01T00:00:00Z')));
  t.true(await service.needsApproval('rollback_deploy'));
  t.true(await service.safeForL2('scale_up'));
  t.false(await service.safeForL2('rollback_deploy'));
});
