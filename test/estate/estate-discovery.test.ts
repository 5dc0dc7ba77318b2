import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { waitFor } from '../helpers/alertmanager.ts';
import { prometheusTest, startPrometheus } from '../helpers/prometheus.ts';
import { json, oncall } from '../helpers/cli.ts';

/** A throwaway repository with a service manifest, a Backstage entity, a bare folder and CODEOWNERS. */
function makeRepo(t: ExecutionContext): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-estate-repo-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const put = (p: string, text: string) => {
    mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
    writeFileSync(path.join(dir, p), text);
  };
  put('CODEOWNERS', '/services/payments/ pay-lead@bank.example\n/services/search/ @org/search\n');
  put('services/payments/service.yaml', 'name: payments\nowner: pay-lead@bank.example\n');
  put(
    'services/ledger/catalog-info.yaml',
    'apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata:\n  name: ledger-api\nspec:\n  type: service\n  owner: group:ledger\n',
  );
  put('services/search/README.md', '# search\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@bank.example', '-c', 'commit.gpgsign=false', ...args], {
      cwd: dir,
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' },
    });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'first');
  return dir;
}

async function build(ta: TestApp): Promise<any> {
  const res = await ta.call('POST', '/v1/estate/build');
  if (res.status !== 202) throw new Error(JSON.stringify(res.body));
  await ta.app.estate.builder.idle();
  return (await ta.call('GET', '/v1/estate')).body;
}

test('a build reads the git connector: manifests are certain repository links (deployed), CODEOWNERS rules and bare folders are matches; names stay candidates until a person adds one', async (t) => {
  const dir = makeRepo(t);
  const ta = await startApp(t);
  await makeOperating(ta);
  t.is((await ta.call('PUT', '/v1/connectors/repo', { body: { kind: 'git', settings: { path: dir } } })).status, 201);
  const estate = await build(ta);
  t.deepEqual(estate.services, [], 'discovery never adds a service');
  const byName = new Map((estate.candidates as any[]).map((c) => [c.name, c]));
  const payments = byName.get('payments');
  t.is(payments.owner, 'pay-lead@bank.example');
  t.true(
    payments.links.some(
      (l: any) => l.kind === 'repository' && l.connector === 'repo' && l.path === 'services/payments' && l.origin === 'deployed' && l.certain === true,
    ),
  );
  t.is(payments.links.filter((l: any) => l.path === 'services/payments').length, 1, 'the CODEOWNERS rule for the same folder gives way to the manifest');
  t.like(byName.get('ledger-api'), { team: 'ledger' });
  const search = byName.get('search');
  t.true(
    search.links.every((l: any) => l.certain === false),
    'a folder and a CODEOWNERS rule are matches',
  );
  t.is(search.team, 'org/search');
  t.true(search.links.some((l: any) => l.origin === 'codeowners'));
  // A person adds one; their fields win over discovery, after the next build too.
  t.is((await ta.call('PUT', '/v1/estate/overrides', { body: { services: { payments: { owner: 'owner@bank.example', tier: 1 } } } })).status, 200);
  const again = await build(ta);
  t.deepEqual(
    again.services.map((s: any) => s.name),
    ['payments'],
  );
  t.like(again.services[0], { owner: 'owner@bank.example', tier: 1 });
  t.true(
    again.services[0].links.some((l: any) => l.origin === 'deployed'),
    'with the links discovery found',
  );
  t.false((again.candidates as any[]).some((c) => c.name === 'payments'));
  t.true((await ta.app.verifyLedger()).ok);
});

test('a human.deploy event names a service and its repository: a certain (deployed) link', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  t.is(
    (
      await ta.call('POST', '/v1/events', {
        token: INGEST_TOKEN,
        body: { type: 'human.deploy', actor: 'release-pipeline', reason: 'release 42', data: { service: 'billing', repository: 'git@example:billing.git' } },
      })
    ).status,
    201,
  );
  const estate = await build(ta);
  const billing = (estate.candidates as any[]).find((c) => c.name === 'billing');
  t.deepEqual(billing.links, [{ kind: 'repository', name: 'git@example:billing.git', origin: 'deployed', certain: true }]);
});

prometheusTest(
  "a build reads Prometheus's labelled targets: workload links of origin label, and alerts of those targets are placed once the service is added",
  async (t) => {
    const prom = await startPrometheus(t, { targetLabels: { service: 'metrics-api', env: 'prod' } });
    const ta = await startApp(t);
    await makeOperating(ta);
    t.is((await ta.call('PUT', '/v1/connectors/metrics', { body: { kind: 'prometheus', settings: { url: `${prom.base}/` } } })).status, 201);
    await waitFor('the first scrape', async () => {
      const r = await ta.call('POST', '/v1/connectors/metrics/query', { body: { query: 'up{service="metrics-api"}' } });
      return r.body.ok === true && (r.body.data?.result?.length ?? 0) > 0 ? r : null;
    });
    const estate = await build(ta);
    const api = (estate.candidates as any[]).find((c) => c.name === 'metrics-api');
    t.truthy(api, JSON.stringify(estate.candidates));
    t.deepEqual(api.links, [{ kind: 'workload', connector: 'metrics', match: 'service="metrics-api"', origin: 'label', certain: true }]);
    t.true((estate.candidates as any[]).some((c) => c.name === 'prometheus' && c.links[0].match === 'job="prometheus"'));
    t.is((await ta.call('PUT', '/v1/estate/overrides', { body: { services: { 'metrics-api': { team: 'observability' } } } })).status, 200);
    await ta.call('POST', '/v1/alerts/alertmanager', {
      token: INGEST_TOKEN,
      body: {
        version: '4',
        status: 'firing',
        alerts: [
          { status: 'firing', labels: { alertname: 'TargetDown', service: 'metrics-api', env: 'prod' }, annotations: {}, startsAt: '2026-06-01T00:00:00Z' },
        ],
      },
    });
    const held = await ta.app.db('held_alerts').where({ name: 'TargetDown' }).first();
    t.is(held.service, 'metrics-api');
    t.is((await ta.call('POST', '/v1/connectors/metrics/check')).body.state, 'ok');
    const autonomy = (await ta.call('GET', '/v1/autonomy')).body.services as any[];
    t.false(
      autonomy.find((s) => s.service === 'metrics-api').readiness.some((r: string) => /No connector can read/.test(r)),
      'the linked connector covers it',
    );
  },
);

test('oncall estate build and estate resolve: the same build and the same resolver, in the CLI process', async (t) => {
  const dir = makeRepo(t);
  const ta = await startApp(t);
  await makeOperating(ta);
  t.is((await ta.call('PUT', '/v1/connectors/repo', { body: { kind: 'git', settings: { path: dir } } })).status, 201);
  t.is(
    (await ta.call('PUT', '/v1/estate/overrides', { body: { services: { payments: { links: [{ kind: 'alert', match: 'job="payments-api"' }] } } } })).status,
    200,
  );
  const built = await oncall(['estate', 'build', '--json'], ta.env);
  t.is(built.code, 0, built.stderr);
  t.like(json(built), { ok: true, state: 'finished', services: 1 });
  t.true(json(built).candidates >= 2);
  const placed = await oncall(['estate', 'resolve', '--json', JSON.stringify({ name: 'HighLatency', labels: { job: 'payments-api' } })], ta.env);
  t.is(placed.code, 0, placed.stderr);
  t.like(json(placed).placements[0], { name: 'HighLatency', service: 'payments', rule: 'alert_link', certain: true });
  const human = await oncall(['estate', 'resolve', JSON.stringify({ name: 'Odd', labels: { job: 'other' } })], ta.env);
  t.regex(human.stdout, /Odd → unknown \(none, a match\)/);
  const bad = await oncall(['estate', 'resolve', 'not json'], ta.env);
  t.is(bad.code, 2);
});
