import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { INGEST_TOKEN, makeOperating, signLicence, startApp, type TestApp } from '../helpers/app.ts';
import { signedIn } from '../helpers/people.ts';

type T = ExecutionContext;

async function operating(t: T, opts: Parameters<typeof startApp>[1] = {}): Promise<TestApp> {
  const ta = await startApp(t, opts);
  await makeOperating(ta);
  return ta;
}
const put = (ta: TestApp, body: unknown, token?: string) => ta.call('PUT', '/v1/estate/overrides', { body, token });
const events = async (ta: TestApp, type: string) => (await ta.call('GET', `/v1/ledger?type=${type}&order=asc&limit=2000`)).body.events as any[];
/** Row counts of the estate's tables and the ledger head: nothing half-written after a refusal. */
const counts = async (ta: TestApp) => ({
  overrides: (await ta.app.db('estate_overrides').select()).length,
  version: Number((await ta.app.db('estate_state').first()).version),
  head: (await ta.app.ledger.head()).seq,
});

test('overrides: a PUT adds services, GET answers them with version, a PUT of what GET answered changes nothing, a stale version is 409', async (t) => {
  const ta = await operating(t);
  t.is((await ta.call('GET', '/v1/estate')).status, 200);
  const empty = (await ta.call('GET', '/v1/estate/overrides')).body;
  t.like(empty, { services: {}, version: 0, updated_at: null, updated_by: null, source: 'api' });
  const res = await put(ta, {
    services: {
      payments: {
        owner: 'owner@bank.example',
        team: 'payments',
        tier: 1,
        approvers: ['owner@bank.example'],
        technologies: ['java', 'postgres'],
        links: [
          { kind: 'alert', match: 'job="payments-api"' },
          { kind: 'database', name: 'pay-db' },
        ],
      },
      ledger: { team: 'ledger', depends_on: ['payments'] },
    },
  });
  t.is(res.status, 200, JSON.stringify(res.body));
  t.is(res.body.version, 1);
  t.is(res.body.updated_by, 'admin-token');
  const got = (await ta.call('GET', '/v1/estate/overrides')).body;
  t.deepEqual(Object.keys(got.services), ['ledger', 'payments']);
  const again = await put(ta, got);
  t.is(again.status, 200, 'what GET answered is accepted back');
  t.is(again.body.version, 1, 'and changes nothing');
  const stale = await put(ta, { ...got, version: 0, services: { ledger: { tier: 3 } } });
  t.is(stale.status, 409);
  t.is(stale.body.error, 'version_conflict');
  const estate = (await ta.call('GET', '/v1/estate')).body;
  t.deepEqual(
    estate.services.map((s: any) => s.name),
    ['ledger', 'payments'],
  );
  t.true('built_at' in estate && Array.isArray(estate.candidates) && Array.isArray(estate.unplaced));
  const one = (await ta.call('GET', '/v1/estate/services/payments')).body.service;
  t.like(one, { name: 'payments', owner: 'owner@bank.example', team: 'payments', tier: 1 });
  t.deepEqual(one.links[0], { kind: 'alert', match: 'job="payments-api"', origin: 'override', certain: true });
  t.deepEqual((await ta.call('GET', '/v1/estate/services/ledger')).body.service.depends_on, [{ service: 'payments', origin: 'override' }]);
  const missing = await ta.call('GET', '/v1/estate/services/nowhere');
  t.is(missing.status, 404);
  t.is(missing.body.error, 'unknown_service');
  // A change is one ledger event with the diff; null removes the service. (Lowering a tier or
  // changing a tier-1 service's approvers waits for approvals: tested below.)
  t.is((await put(ta, { services: { ledger: null, payments: { ...got.services.payments, team: 'payments-core' } }, version: 1 })).status, 200);
  const changed = await events(ta, 'estate.overrides_changed');
  t.is(changed.length, 2);
  t.deepEqual(Object.keys(changed[0].data.diff.added), ['ledger', 'payments']);
  t.deepEqual(changed[1].data.diff.removed, ['ledger']);
  t.deepEqual(changed[1].data.diff.changed.payments, { team: { from: 'payments', to: 'payments-core' } });
  t.is((await ta.call('GET', '/v1/estate/services/ledger')).status, 404);
  const schema = (await ta.call('GET', '/v1/estate/overrides/schema')).body;
  t.is(schema.properties.services.type, 'object');
  t.true((await ta.app.verifyLedger()).ok);
});

test('bad overrides answer 400 naming the field; nothing is written and the ledger verifies', async (t) => {
  const ta = await operating(t);
  t.is((await put(ta, { services: { payments: { tier: 1 } } })).status, 200);
  const before = await counts(ta);
  const cases: Array<[unknown, RegExp]> = [
    [{ services: { payments: { tier: 1, colour: 'red' } } }, /services\.payments: unknown field colour/],
    [{ services: { payments: { tier: 5 } } }, /services\.payments\.tier/],
    [{ services: { payments: { tier: 0 } } }, /services\.payments\.tier/],
    [{ services: { payments: { approvers: ['nobody@bank.example'] } } }, /services\.payments\.approvers\.0: nobody@bank\.example is not a person/],
    [{ services: { payments: { depends_on: ['payments'] } } }, /services\.payments\.depends_on: a service cannot depend on itself/],
    [{ services: { payments: { links: [{ kind: 'alert', match: 'job=~"("' }] } } }, /services\.payments\.links\.0\.match/],
    [{ services: { payments: { links: [{ kind: 'disk' }] } } }, /services\.payments\.links\.0\.kind/],
    [{ services: { 'bad name!': {} } }, /services/],
    [{ services: {}, extra: 1 }, /unknown field extra/],
  ];
  for (const [body, message] of cases) {
    // A valid new service beside the bad one: the whole PUT is refused, not half of it.
    const withGood = typeof (body as any).services === 'object' ? { ...(body as any), services: { fresh: { tier: 2 }, ...(body as any).services } } : body;
    const res = await put(ta, withGood);
    t.is(res.status, 400, JSON.stringify(body));
    t.is(res.body.error, 'invalid_body');
    t.regex(res.body.message, message);
  }
  t.deepEqual(await counts(ta), before);
  t.is((await ta.call('GET', '/v1/estate/services/fresh')).status, 404);
  t.true((await ta.app.verifyLedger()).ok);
});

test('viewers read the estate, only admins change it', async (t) => {
  const ta = await operating(t);
  const viewer = await signedIn(ta, 'vera@bank.example', 'viewer');
  const admin = await signedIn(ta, 'adam@bank.example', 'admin');
  t.is((await ta.call('GET', '/v1/estate', { token: viewer })).status, 200);
  t.is((await ta.call('GET', '/v1/estate/overrides', { token: viewer })).status, 200);
  t.is((await ta.call('GET', '/v1/estate/suggestions', { token: viewer })).status, 200);
  const refused = await put(ta, { services: { a: {} } }, viewer);
  t.is(refused.status, 403);
  t.is((await ta.call('POST', '/v1/estate/build', { token: viewer })).status, 403);
  t.is((await ta.call('POST', '/v1/estate/suggestions/dismiss', { token: viewer, body: { id: 'x' } })).status, 403);
  t.is((await put(ta, { services: { a: { approvers: ['vera@bank.example'] } } }, admin)).status, 200);
  t.is((await ta.call('GET', '/v1/estate', { token: null })).status, 401);
});

test('the licence limit: only added services count; adding one over the limit is 409 licence_limit naming the tier, also when requests race', async (t) => {
  const ta = await startApp(t);
  t.is((await ta.call('POST', '/v1/licence', { body: { licence: signLicence({ tier: 'starter', services: 3 }) } })).status, 200);
  t.is((await ta.call('POST', '/v1/auth/bootstrap', { body: { email: 'owner@bank.example', name: 'Owner' } })).status, 201);
  // Alerts and candidates count for nothing.
  await ta.call('POST', '/v1/alerts/generic', {
    token: INGEST_TOKEN,
    body: { alerts: ['x1', 'x2', 'x3', 'x4'].map((s) => ({ name: 'Down', service: s, severity: 'critical', id: s })) },
  });
  t.like((await ta.call('GET', '/v1/status', { token: null })).body.licence, { services_used: 0, services_allowed: 3 });
  t.is((await put(ta, { services: { a: {}, b: {} } })).status, 200);
  const race = await Promise.all(['c', 'd', 'e'].map((n) => put(ta, { services: { [n]: {} } })));
  t.is(race.filter((r) => r.status === 200).length, 1, 'one of three racing adds fits');
  for (const r of race.filter((x) => x.status !== 200)) {
    t.is(r.status, 409);
    t.is(r.body.error, 'licence_limit');
    t.regex(r.body.message, /Starter licence allows 3 services/);
  }
  t.is((await ta.app.db('estate_overrides').select()).length, 3);
  t.like((await ta.call('GET', '/v1/status', { token: null })).body.licence, { services_used: 3, services_allowed: 3 });
  // Changing an added service or removing one is never refused.
  t.is((await put(ta, { services: { a: { team: 'ops' } } })).status, 200);
  t.is((await put(ta, { services: { a: null, f: {} } })).status, 200, 'a swap keeps the count');
  t.true((await ta.app.verifyLedger()).ok);
});

test('estate.json in SERVICE_CONFIG_DIR makes the overrides file-managed: they come from the file and a PUT is 409 estate_file_managed', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-estate-conf-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    path.join(dir, 'estate.json'),
    JSON.stringify({ services: { payments: { tier: 1, team: 'payments', links: [{ kind: 'workload', match: 'job="payments-api"' }] } } }),
  );
  const ta = await operating(t, { env: { SERVICE_CONFIG_DIR: dir } });
  const got = (await ta.call('GET', '/v1/estate/overrides')).body;
  t.is(got.source, 'file');
  t.deepEqual(Object.keys(got.services), ['payments']);
  const refused = await put(ta, got);
  t.is(refused.status, 409);
  t.is(refused.body.error, 'estate_file_managed');
  t.like((await ta.call('GET', '/v1/estate/services/payments')).body.service, { tier: 1, team: 'payments' });
  t.is((await events(ta, 'estate.overrides_changed'))[0].data.via, 'file');
  t.truthy(readFileSync(path.join(dir, 'estate.json')));
});

/** One firing fixture of each of the seven normalisers, and the label matchers that place it. */
const SEVEN: Array<{ source: string; fixture: string; service: string; link: Record<string, string> }> = [
  {
    source: 'alertmanager',
    fixture: 'fire-firing-no-fingerprint',
    service: 'am-svc',
    link: { kind: 'alert', match: 'alertname="Fire", severity=~"critical|warning"' },
  },
  { source: 'azure', fixture: 'activity-log-administrative-fired-sev4', service: 'vm-svc', link: { kind: 'alert', match: 'signalType="Activity Log"' } },
  { source: 'datadog', fixture: 'custom-metric-monitor-triggered', service: 'dock-svc', link: { kind: 'workload', match: 'host="i-3b93aafb"' } },
  {
    source: 'elastic',
    fixture: 'kibana-keep-connector-filled-fired',
    service: 'kibana-svc',
    link: { kind: 'alert', match: 'actionGroup="custom_threshold.fired"' },
  },
  { source: 'generic', fixture: 'batch-mixed', service: 'db-svc', link: { kind: 'workload', match: 'host=~"db-[0-9]+"' } },
  { source: 'pagerduty', fixture: 'events-v2-trigger', service: 'pd-svc', link: { kind: 'alert', match: 'siem="pagerduty"' } },
  { source: 'splunk', fixture: 'enterprise-webhook-doc-example', service: 'mongo-svc', link: { kind: 'alert', match: 'result.sourcetype="mongod"' } },
];
const fixture = (source: string, name: string) =>
  JSON.parse(readFileSync(new URL(`../../plugins/normalisers/${source}/fixtures/${name}.json`, import.meta.url), 'utf8'));

test('alerts of all seven sources are placed by label matchers at intake, one episode per service; the rest stay unknown and are listed most frequent first', async (t) => {
  const ta = await operating(t);
  const services: Record<string, unknown> = { 'edge-proxy': { owner: 'owner@bank.example' } };
  for (const s of SEVEN) services[s.service] = { links: [s.link] };
  t.is((await put(ta, { services })).status, 200);
  for (const s of SEVEN) {
    const res = await ta.call('POST', `/v1/alerts/${s.source}`, { token: INGEST_TOKEN, body: fixture(s.source, s.fixture) });
    t.is(res.status, 202, `${s.source}: ${JSON.stringify(res.body)}`);
  }
  // Unplaced: two names, one three times as often.
  await ta.call('POST', '/v1/alerts/generic', {
    token: INGEST_TOKEN,
    body: { alerts: [1, 2, 3].map((i) => ({ name: 'Mystery', severity: 'warning', id: `m${i}` })) },
  });
  await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name: 'Rare', severity: 'warning', id: 'r1' } });
  const held = (await ta.app.db('held_alerts').select('source', 'name', 'service', 'status')) as any[];
  for (const s of SEVEN) {
    const mine = held.filter(
      (h) => h.source === s.source && h.status === 'firing' && !(s.source === 'generic' && h.name === 'CertExpiring') && !['Mystery', 'Rare'].includes(h.name),
    );
    t.true(mine.length > 0, s.source);
    for (const h of mine) t.is(h.service, s.service, `${s.source} ${h.name}`);
  }
  t.is(held.find((h) => h.name === 'CertExpiring').service, 'edge-proxy', "an alert's own service the estate knows places it");
  ta.clock.advance(25_000);
  await ta.app.episodes.process();
  const episodes = (await ta.call('GET', '/v1/episodes?limit=50')).body.episodes as any[];
  const by = new Set(episodes.map((e) => e.service));
  for (const s of SEVEN) t.true(by.has(s.service), `an episode of ${s.service}`);
  t.true(by.has('unknown'));
  const unplaced = (await ta.call('GET', '/v1/estate')).body.unplaced;
  t.like(unplaced[0], { source: 'generic', name: 'Mystery', count: 3 });
  t.like(unplaced[1], { source: 'generic', name: 'Rare', count: 1 });
  // Readiness: "has no owner" only when the estate names none.
  const autonomy = (await ta.call('GET', '/v1/autonomy')).body.services as any[];
  const edge = autonomy.find((s) => s.service === 'edge-proxy');
  t.false(edge.readiness.some((r: string) => /has no owner/.test(r)));
  t.true(autonomy.find((s) => s.service === 'am-svc').readiness.some((r: string) => /has no owner/.test(r)));
});

test('a change made by another host process is seen within a second by the resolver (version check, no query per alert)', async (t) => {
  const ta = await operating(t);
  const estate = ta.app.estate.estate;
  await estate.ready();
  t.is(estate.place({ name: 'X', service: null, labels: { job: 'api' } }).service, null);
  // Written behind this process's back, as another host would.
  await ta.app.db('estate_overrides').insert({
    name: 'api',
    doc: JSON.stringify({ links: [{ kind: 'workload', match: 'job="api"' }] }),
    added_by: 'x',
    added_at: 'now',
    added_seq: 1,
    updated_at: 'now',
  });
  await ta.app.db('estate_state').update({ version: 99 });
  await estate.ready();
  t.is(estate.place({ name: 'X', service: null, labels: { job: 'api' } }).service, null, 'not yet: the index is trusted for a second');
  ta.clock.advance(1001);
  await estate.ready();
  t.like(estate.place({ name: 'X', service: null, labels: { job: 'api' } }), { service: 'api', rule: 'workload_link', certain: true });
});

test('suggestions from co-firing and shared databases; confirm makes a dependency, dismiss hides it for good; overrides and dismissals survive a rebuild', async (t) => {
  const ta = await operating(t);
  t.is(
    (
      await put(ta, {
        services: {
          web: { links: [{ kind: 'database', name: 'main-db' }] },
          api: { owner: 'owner@bank.example', links: [{ kind: 'database', name: 'main-db' }] },
          cache: {},
          queue: {},
        },
      })
    ).status,
    200,
  );
  // cache and queue open episodes together four times.
  for (let i = 0; i < 4; i++) {
    await ta.call('POST', '/v1/alerts/generic', {
      token: INGEST_TOKEN,
      body: { alerts: ['cache', 'queue'].map((s) => ({ name: `Down${i}`, service: s, severity: 'critical', id: `${s}-${i}` })) },
    });
    ta.clock.advance(25_000);
    await ta.app.episodes.process();
    await ta.call('POST', '/v1/alerts/generic', {
      token: INGEST_TOKEN,
      body: { alerts: ['cache', 'queue'].map((s) => ({ name: `Down${i}`, service: s, severity: 'critical', status: 'resolved', id: `${s}-${i}` })) },
    });
    await ta.app.episodes.process();
    ta.clock.advance(3_600_000);
  }
  await ta.app.estate.builder.assemble(null, 'test');
  const list = (await ta.call('GET', '/v1/estate/suggestions')).body.suggestions as any[];
  const shared = list.find((s) => s.service === 'api' && s.depends_on === 'web');
  const cofire = list.find((s) => s.service === 'cache' && s.depends_on === 'queue');
  t.truthy(shared, JSON.stringify(list));
  t.is(shared.evidence[0].kind, 'shared_database');
  t.truthy(cofire, JSON.stringify(list));
  t.like(cofire.evidence[0], { kind: 'co_firing', times: 4 });
  t.true(cofire.score > 0 && cofire.score <= 1);
  const unknown = await ta.call('POST', '/v1/estate/suggestions/confirm', { body: { id: 'nope' } });
  t.is(unknown.status, 404);
  t.is((await ta.call('POST', '/v1/estate/suggestions/confirm', { body: {} })).status, 400);
  t.is((await ta.call('POST', '/v1/estate/suggestions/confirm', { body: { id: cofire.id } })).status, 200);
  t.is((await ta.call('POST', '/v1/estate/suggestions/dismiss', { body: { id: shared.id } })).status, 200);
  t.deepEqual((await ta.call('GET', '/v1/estate/services/cache')).body.service.depends_on, [{ service: 'queue', origin: 'confirmed' }]);
  // A rebuild (through the API: a discovery job, then the assembly) brings neither back and keeps the overrides.
  const build = await ta.call('POST', '/v1/estate/build');
  t.is(build.status, 202);
  t.truthy(build.body.job.id);
  await ta.app.estate.builder.idle();
  t.is((await ta.call('GET', `/v1/jobs/${build.body.job.id}`)).status, 200);
  t.deepEqual((await ta.call('GET', '/v1/estate/suggestions')).body.suggestions, []);
  t.deepEqual((await ta.call('GET', '/v1/estate/services/cache')).body.service.depends_on, [{ service: 'queue', origin: 'confirmed' }]);
  t.is((await ta.call('GET', '/v1/estate/services/api')).body.service.owner, 'owner@bank.example');
  t.truthy((await ta.call('GET', '/v1/estate')).body.built_at);
  t.is((await events(ta, 'estate.suggestion_confirmed')).length, 1);
  t.is((await events(ta, 'estate.suggestion_dismissed')).length, 1);
  t.true((await events(ta, 'estate.built')).length >= 2);
  t.true((await ta.app.verifyLedger()).ok);
});

test('an alert link service="old-name" is an alias; a build turns the services alerts name into candidates with a certain alert link', async (t) => {
  const ta = await operating(t);
  t.is((await put(ta, { services: { payments: { links: [{ kind: 'alert', match: 'service="pay-legacy"' }] } } })).status, 200);
  await ta.call('POST', '/v1/alerts/generic', {
    token: INGEST_TOKEN,
    body: {
      alerts: [
        { name: 'Slow', service: 'pay-legacy', severity: 'warning', id: 'a1' },
        { name: 'Down', service: 'checkout', severity: 'critical', id: 'a2' },
      ],
    },
  });
  const held = (await ta.app.db('held_alerts').select('fingerprint', 'name', 'service')) as any[];
  t.is(held.find((h) => h.name === 'Slow').service, 'payments', 'placed through the alias');
  t.is(held.find((h) => h.name === 'Down').service, 'checkout', 'a name the estate does not have is kept, as a match');
  t.like(ta.app.estate.estate.place({ name: 'Down', service: 'checkout', labels: {} }), { service: 'checkout', rule: 'alert_service', certain: false });
  await ta.app.estate.builder.assemble(null, 'test');
  const estate = (await ta.call('GET', '/v1/estate')).body;
  const checkout = estate.candidates.find((c: any) => c.name === 'checkout');
  t.deepEqual(checkout.links, [{ kind: 'alert', match: 'service="checkout"', origin: 'label', certain: true }]);
  t.deepEqual(checkout.sources, [{ connector: null, how: 'alert' }]);
  t.false(
    estate.candidates.some((c: any) => c.name === 'payments'),
    'an added service is no candidate',
  );
});

test('a change too large for one ledger event is recorded whole, in parts, in the same transaction', async (t) => {
  const ta = await startApp(t);
  t.is((await ta.call('POST', '/v1/licence', { body: { licence: signLicence({ tier: 'strategic', services: null, installs: null }) } })).status, 200);
  t.is((await ta.call('POST', '/v1/auth/bootstrap', { body: { email: 'owner@bank.example', name: 'Owner' } })).status, 201);
  const services: Record<string, unknown> = {};
  for (let i = 0; i < 400; i++)
    services[`svc-${i}`] = {
      team: `team-${i}`,
      tier: 2,
      links: Array.from({ length: 4 }, (_, j) => ({ kind: 'workload', match: `job="svc-${i}-worker-${j}", env="production"` })),
    };
  const res = await put(ta, { services });
  t.is(res.status, 200, JSON.stringify(res.body).slice(0, 300));
  const parts = await events(ta, 'estate.overrides_changed');
  t.true(parts.length > 1);
  t.true(parts.every((e) => e.data.parts === parts.length && e.data.version === 1));
  t.is(
    parts.reduce((n, e) => n + Object.keys(e.data.diff.added).length, 0),
    400,
    'every service is in one part',
  );
  t.true((await ta.app.verifyLedger()).ok);
});

test('examples/estate/estate.json is a valid overrides document the service loads as file-managed', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-estate-example-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'estate.json'), readFileSync(new URL('../../examples/estate/estate.json', import.meta.url)));
  const ta = await operating(t, { env: { SERVICE_CONFIG_DIR: dir } });
  const estate = (await ta.call('GET', '/v1/estate')).body;
  t.deepEqual(
    estate.services.map((s: any) => s.name),
    ['ledger', 'payments-api'],
  );
  await ta.app.estate.estate.ready();
  t.like(ta.app.estate.estate.place({ name: 'X', service: null, labels: { 'kubernetes.namespace': 'payments', env: 'prod' } }), {
    service: 'payments-api',
    rule: 'alert_link',
  });
  t.is(ta.app.estate.estate.place({ name: 'X', service: null, labels: { 'kubernetes.namespace': 'payments', env: 'dev' } }).service, null);
  t.like(ta.app.estate.estate.place({ name: 'X', service: 'ledger-legacy', labels: {} }), { service: 'ledger', rule: 'alert_link' });
  t.like(ta.app.estate.estate.place({ name: 'X', service: null, labels: { unit: 'ledger.service' } }), { service: 'ledger', rule: 'workload_link' });
});

test('the resolver: regular-expression-only links are looked up by their label and literal start, and match whole values only', async (t) => {
  const { EstateIndex } = await import('../../host/estate/resolver.ts');
  const svc = (name: string, match: string) => ({ name, links: [{ kind: 'alert' as const, match, origin: 'override' as const, certain: true }] }) as any;
  const index = new EstateIndex(1, [
    svc('db', 'host=~"db-[0-9]+"'),
    svc('opt', 'host=~"ab?c"'),
    svc('any', 'team=~"pay|bill"'),
    svc('legacy', 'service=~"old-.*"'),
  ]);
  const at = (labels: Record<string, string>, service: string | null = null) => index.resolve({ name: 'A', service, labels }).service;
  t.is(at({ host: 'db-12' }), 'db');
  t.is(at({ host: 'xdb-12' }), null, 'the whole value must match');
  t.is(at({ host: 'db-12x' }), null);
  t.is(at({ host: 'ac' }), 'opt', 'a quantified last character is not part of the literal start');
  t.is(at({ host: 'abc' }), 'opt');
  t.is(at({ team: 'bill' }), 'any', 'alternatives have no literal start');
  t.is(at({}, 'old-pay'), 'legacy', 'an alias by regular expression');
  t.is(at({ other: 'db-1' }), null);
});

test('regular expressions match with RE2 semantics in linear time: a pattern that backtracks in JavaScript places an alert at once', async (t) => {
  const { EstateIndex } = await import('../../host/estate/resolver.ts');
  const { matches, parseMatchers } = await import('../../host/matchers.ts');
  // JavaScript's backtracking engine takes 2^n steps for (a+)+b against n a's and no b: with 64
  // of them this never returns. RE2 answers in time linear in the value.
  const nested = parseMatchers('job=~"(a+)+b"');
  t.true(nested.ok);
  if (!nested.ok) return;
  t.false(matches(nested.matchers, { job: `${'a'.repeat(64)}c` }));
  t.true(matches(nested.matchers, { job: 'aaab' }));
  const index = new EstateIndex(1, [{ name: 'evil', links: [{ kind: 'alert', match: 'job=~"(a+)+b"', origin: 'override', certain: true }] } as any]);
  t.is(index.resolve({ name: 'A', service: null, labels: { job: `${'a'.repeat(64)}c` } }).service, null);
  // Prometheus's (RE2's) syntax: inline flags work; backreferences and lookaround do not exist.
  const flags = parseMatchers('namespace=~"(?i)payments"');
  t.true(flags.ok && matches(flags.matchers, { namespace: 'PAYMENTS' }));
  const dot = parseMatchers('summary=~"disk.*full"');
  t.true(dot.ok && matches(dot.matchers, { summary: 'disk\nfull' }), 'a dot matches a line break, as in Prometheus 3');
  for (const pattern of ['(a)\\\\1', 'a(?=b)', '(?<!x)a']) {
    const p = parseMatchers(`job=~"${pattern}"`);
    t.false(p.ok, pattern);
    if (!p.ok) t.regex(p.problem, /is not a regular expression RE2 \(Prometheus\) accepts/);
  }
});

test('a matcher RE2 refuses (a backreference, lookahead) answers 400 naming the pattern, and nothing is written', async (t) => {
  const ta = await operating(t);
  const before = await counts(ta);
  for (const match of ['job=~"(a)\\\\1"', 'job=~"pay(?=ments)"']) {
    const res = await put(ta, { services: { payments: { links: [{ kind: 'alert', match }] } } });
    t.is(res.status, 400, match);
    t.is(res.body.error, 'invalid_body');
    t.regex(res.body.message, /^services\.payments\.links\.0\.match: job=~".*" is not a regular expression RE2 \(Prometheus\) accepts/);
  }
  t.deepEqual(await counts(ta), before);
});
