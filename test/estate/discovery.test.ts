import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { signedIn } from '../helpers/people.ts';
import { prometheusTest, startPrometheus } from '../helpers/prometheus.ts';

const SECRET = 'vendor-SECRET-77aa88bb99cc';

/** A throwaway repository with CODEOWNERS, a service.yaml, a Backstage catalog-info and a bare services/ folder. */
function makeRepo(t: ExecutionContext): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-disc-repo-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const put = (p: string, text: string) => {
    mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
    writeFileSync(path.join(dir, p), text);
  };
  put('.github/CODEOWNERS', '* @org/platform\n/services/payments/ @org/payments\nservices/search @org/search\n');
  put('services/payments/service.yaml', 'name: payments\nowner: team-payments\n');
  put(
    'services/ledger/catalog-info.yaml',
    'apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata:\n  name: ledger-api\nspec:\n  type: service\n  owner: group:ledger\n',
  );
  put('services/notifications/README.md', '# notifications\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@bank.example', '-c', 'commit.gpgsign=false', ...args], {
      cwd: dir,
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' },
    });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'services');
  return dir;
}

/** Vendor connector plugins (SERVICE_PLUGINS_DIR): one whose discover never answers, one that throws holding its secret, one that answers odd names. */
function vendorPlugins(t: ExecutionContext): string {
  const root = mkdtempSync(path.join(tmpdir(), 'oncall-disc-plugins-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const schema = { type: 'object', additionalProperties: false, properties: { secret: { type: 'string', writeOnly: true } } };
  const plugins: Record<string, string> = {
    stuck: 'export default { test: () => ({ ok: true, problem: null }), discover: () => new Promise(() => {}) };\n',
    boom: 'export default { test: () => ({ ok: true, problem: null }), discover: (ctx) => { throw new Error(`exploded holding ${ctx.settings.secret}`); } };\n',
    odd: `export default { test: () => ({ ok: true, problem: null }), discover: (ctx) => ({ services: [
      { name: 'checkout', source: 'label', evidence: { label: 'service', leaked: ctx.settings.secret } },
      { name: 'Checkout', source: 'label', evidence: { label: 'app' } },
      { name: '../etc', source: 'label', evidence: {} },
      { name: 42 },
      null,
    ] }) };\n`,
  };
  for (const [name, code] of Object.entries(plugins)) {
    mkdirSync(path.join(root, name));
    writeFileSync(
      path.join(root, name, 'plugin.json'),
      JSON.stringify({ name, version: '1.0.0', kind: 'connector', api: '^1.0.0', entry: 'index.mjs', settings: schema }),
    );
    writeFileSync(path.join(root, name, 'index.mjs'), code);
  }
  return root;
}

async function operating(t: ExecutionContext, env: Record<string, string | undefined> = {}): Promise<TestApp> {
  const ta = await startApp(t, { env });
  await makeOperating(ta);
  return ta;
}

async function put(ta: TestApp, name: string, kind: string, settings: Record<string, unknown>): Promise<void> {
  const res = await ta.call('PUT', `/v1/connectors/${name}`, { body: { kind, settings } });
  if (res.status !== 201) throw new Error(`PUT ${name}: ${JSON.stringify(res.body)}`);
}

const byName = (candidates: Array<{ name: string }>) => Object.fromEntries(candidates.map((c) => [c.name, c]));

test('discovery answers 503 before the install is operating', async (t) => {
  const ta = await startApp(t);
  for (const [method, p] of [
    ['POST', '/v1/discover'],
    ['GET', '/v1/jobs/00000000-0000-0000-0000-000000000000'],
  ] as const) {
    const res = await ta.call(method, p);
    t.is(res.status, 503, `${method} ${p}`);
    t.is(res.body.error, 'not_operating');
  }
});

test('admins start a job, viewers follow it; an unknown job is 404', async (t) => {
  const ta = await operating(t);
  const viewer = await signedIn(ta, 'viewer@bank.example', 'viewer');
  const admin = await signedIn(ta, 'admin@bank.example', 'admin');
  t.is((await ta.call('POST', '/v1/discover', { token: null })).status, 401);
  const refused = await ta.call('POST', '/v1/discover', { token: viewer });
  t.is(refused.status, 403);
  t.is(refused.body.error, 'forbidden');
  const started = await ta.call('POST', '/v1/discover', { token: admin });
  t.is(started.status, 202);
  t.is(started.headers.get('location'), `/v1/jobs/${started.body.job.id}`);
  t.like(started.body.job, { kind: 'discovery', by: 'admin@bank.example', connections: 0, timeout_s: 45 });
  await ta.app.discovery.idle();
  const seen = await ta.call('GET', `/v1/jobs/${started.body.job.id}`, { token: viewer });
  t.is(seen.status, 200);
  t.like(seen.body.job, { state: 'finished', connections: 0, found: 0, steps: [], candidates: [] });
  t.is((await ta.call('GET', '/v1/jobs/00000000-0000-0000-0000-000000000000', { token: viewer })).status, 404);
  t.is((await ta.call('GET', '/v1/jobs/nope', { token: viewer })).status, 404);
});

test('a job over a git connector keeps what it finds as candidates, with evidence and owners, and records it in the ledger', async (t) => {
  const repo = makeRepo(t);
  const ta = await operating(t);
  await put(ta, 'repo', 'git', { path: repo });
  await put(ta, 'web', 'http', { base_url: 'http://127.0.0.1:9' });

  const started = await ta.call('POST', '/v1/discover');
  t.is(started.status, 202);
  const id = started.body.job.id as string;
  t.is(started.body.job.connections, 1, 'only kinds that can discover are asked');
  t.deepEqual(
    started.body.job.steps.map((s: { connector: string }) => s.connector),
    ['repo'],
  );
  await ta.app.discovery.idle();

  const { job } = (await ta.call('GET', `/v1/jobs/${id}`)).body;
  t.like(job, { id, state: 'finished', connections: 1, found: 5, new_candidates: 5, failed: 0, problem: null });
  t.like(job.steps[0], { connector: 'repo', kind: 'git', state: 'finished', found: 5, problem: null, cut_off: false });
  t.is(typeof job.steps[0].took_ms, 'number');
  const c = byName(job.candidates) as Record<string, any>;
  t.deepEqual(Object.keys(c).sort(), ['ledger', 'ledger-api', 'notifications', 'payments', 'search']);
  t.like(c.payments, { source: 'repo', kind: 'git', new: true });
  t.deepEqual(
    c.payments.evidence.map((e: { source: string }) => e.source),
    ['manifest', 'folder', 'codeowners'],
  );
  t.like(c.payments.evidence[0], {
    path: 'services/payments/service.yaml',
    owner: 'team-payments',
    owners: ['@org/payments'],
    codeowners: '.github/CODEOWNERS:2',
  });
  t.like(c['ledger-api'].evidence[0], { source: 'manifest', manifest: 'backstage', owner: 'group:ledger', owners: ['@org/platform'] });
  t.like(c.search.evidence[0], { source: 'codeowners', path: 'services/search', owners: ['@org/search'] });

  // Candidates only: kept in their table, not made services.
  t.is(Number((await ta.app.db('service_candidates').count({ n: '*' }).first())?.n), 5);

  // Again: the same names, none new, last found moved on.
  ta.clock.advance(60_000);
  const again = await ta.call('POST', '/v1/discover');
  await ta.app.discovery.idle();
  const second = (await ta.call('GET', `/v1/jobs/${again.body.job.id}`)).body.job;
  t.like(second, { state: 'finished', found: 5, new_candidates: 0 });
  t.true(second.candidates.every((x: { new: boolean; first_found_at: string; last_found_at: string }) => !x.new && x.first_found_at < x.last_found_at));
  t.is(Number((await ta.app.db('service_candidates').count({ n: '*' }).first())?.n), 5);

  const events = (await ta.call('GET', '/v1/ledger?type=discovery.&order=asc')).body.events;
  t.deepEqual(
    events.map((e: { type: string }) => e.type),
    ['discovery.started', 'discovery.finished', 'discovery.started', 'discovery.finished'],
  );
  t.like(events[0], { actor: 'admin-token', data: { job: id, connections: ['repo'], timeout_s: 45 } });
  t.like(events[1], { actor: 'system', data: { job: id, by: 'admin-token', connections: 1, finished: 1, failed: 0, cut_off: 0, found: 5, new_candidates: 5 } });
  t.true((await ta.call('GET', '/v1/ledger/verify')).body.ok);
});

test('a connection that hangs is cut off at SERVICE_DISCOVER_TIMEOUT_S; one job at a time; failures are scrubbed', async (t) => {
  const repo = makeRepo(t);
  // 10 s: the cut-off applies to every connection, and the git one (about ten `git` runs one
  // after the other) must finish within it on a loaded machine: 3 s left it little margin.
  const ta = await operating(t, { SERVICE_PLUGINS_DIR: vendorPlugins(t), SERVICE_DISCOVER_TIMEOUT_S: '10' });
  await put(ta, 'repo', 'git', { path: repo });
  await put(ta, 'stuck', 'stuck', {});
  await put(ta, 'boom', 'boom', { secret: SECRET });
  await put(ta, 'odd', 'odd', { secret: SECRET });

  // Two at once: one starts, the other is refused (the running key lets one job through).
  const both = await Promise.all([ta.call('POST', '/v1/discover'), ta.call('POST', '/v1/discover')]);
  t.deepEqual(both.map((r) => r.status).sort(), [202, 409]);
  const started = both.find((r) => r.status === 202)!;
  const id = started.body.job.id as string;
  t.like(started.body.job, { state: 'running', connections: 4, timeout_s: 10 });
  t.is(both.find((r) => r.status === 409)!.body.error, 'discovery_running');

  // While it runs: a second job is refused, naming the running one; progress shows per connection.
  const second = await ta.call('POST', '/v1/discover');
  t.is(second.status, 409);
  t.is(second.body.error, 'discovery_running');
  t.regex(second.body.message, new RegExp(id));
  t.is(second.headers.get('location'), `/v1/jobs/${id}`);
  const during = (await ta.call('GET', `/v1/jobs/${id}`)).body.job;
  t.is(during.state, 'running');
  t.true(during.steps.some((s: { state: string }) => s.state === 'running' || s.state === 'queued'));

  // `stuck` never answers: the job ends at all only because that connection is cut off.
  await ta.app.discovery.idle();

  const { job } = (await ta.call('GET', `/v1/jobs/${id}`)).body;
  t.like(job, { state: 'finished', connections: 4, failed: 2 }, JSON.stringify(job.steps));
  const steps = Object.fromEntries(job.steps.map((s: { connector: string }) => [s.connector, s])) as Record<string, any>;
  t.like(steps.stuck, { state: 'failed', cut_off: true, found: 0, problem: 'no answer within 10 s (cut off)' });
  // The reported cut-off is the configured 10 s, and the step waited for it rather than failing at
  // once (a timer never fires early). No tight upper bound on a wall-clock figure, which a loaded
  // machine can stretch; only one a working cut-off cannot reach: the 45 s default it replaces.
  t.true(steps.stuck.took_ms >= 9900, String(steps.stuck.took_ms));
  t.true(steps.stuck.took_ms < 45_000, `the configured cut-off, not the default: ${steps.stuck.took_ms}`);
  t.like(steps.boom, { state: 'failed', cut_off: false, problem: 'the discovery failed: exploded holding [redacted]' });
  t.like(steps.odd, { state: 'finished', found: 1, dropped: 3 });
  t.like(steps.repo, { state: 'finished', found: 5 });
  const odd = job.candidates.filter((x: { source: string }) => x.source === 'odd');
  t.deepEqual(
    odd.map((x: { name: string }) => x.name),
    ['checkout'],
    'names equal but for case are one candidate',
  );
  t.deepEqual(odd[0].evidence, [
    { source: 'label', label: 'service', leaked: '[redacted]' },
    { source: 'label', label: 'app' },
  ]);

  const finished = (await ta.call('GET', '/v1/ledger?type=discovery.finished')).body.events[0];
  t.like(finished.data, { job: id, connections: 4, finished: 2, failed: 2, cut_off: 1, found: 6, new_candidates: 6 });
  const ledger = await ta.call('GET', '/v1/ledger?limit=2000');
  for (const [where, text] of Object.entries({ answers: JSON.stringify(job), logs: ta.logs.join('\n'), ledger: JSON.stringify(ledger.body) }))
    t.false(text.includes(SECRET), `secret in ${where}`);
  t.true((await ta.app.verifyLedger()).ok);

  // Once it ended, the next one may start.
  t.is((await ta.call('POST', '/v1/discover')).status, 202);
  await ta.app.discovery.idle();
});

test('a job left running by a host that stopped is abandoned after the limit and no longer blocks', async (t) => {
  const ta = await operating(t);
  const first = await ta.call('POST', '/v1/discover');
  await ta.app.discovery.idle();
  // Pretend another host holds a running job and stopped without finishing it.
  await ta.app.db('discovery_jobs').where({ id: first.body.job.id }).update({ state: 'running', finished_at: null, running_key: 'discovery' });
  t.is((await ta.call('POST', '/v1/discover')).status, 409);
  ta.clock.advance(45_000 + 61_000);
  const next = await ta.call('POST', '/v1/discover');
  t.is(next.status, 202);
  await ta.app.discovery.idle();
  const old = (await ta.call('GET', `/v1/jobs/${first.body.job.id}`)).body.job;
  t.is(old.state, 'failed');
  t.regex(old.problem, /^abandoned: no progress for 106 s/);
  t.is((await ta.call('GET', '/v1/ledger?type=discovery.failed')).body.events.length, 1);
});

prometheusTest('a prometheus connector proposes the job (and service) labels of its scrape targets', async (t) => {
  const prom = await startPrometheus(t);
  const ta = await operating(t);
  await put(ta, 'metrics', 'prometheus', { url: prom.base });
  await prom.firstScrape();
  const started = await ta.call('POST', '/v1/discover');
  await ta.app.discovery.idle();
  const { job } = (await ta.call('GET', `/v1/jobs/${started.body.job.id}`)).body;
  t.like(job.steps[0], { connector: 'metrics', kind: 'prometheus', state: 'finished', found: 1 });
  t.like(job.candidates[0], { name: 'prometheus', source: 'metrics', kind: 'prometheus', evidence: [{ source: 'label', label: 'job', targets: 1 }] });
});
