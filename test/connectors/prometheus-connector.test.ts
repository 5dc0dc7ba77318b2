import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { ConnectorContext, ConnectorPluginWithCapabilities, ConnectorRangeRequest } from '../../host/plugins/contract.ts';
import { pluginHttp } from '../../host/plugins/http-client.ts';
import { pluginLibrary } from '../../host/plugins/lib/index.ts';
import connector from '../../plugins/connectors/prometheus/index.ts';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { freePort, waitFor } from '../helpers/alertmanager.ts';
import { PROMETHEUS_BIN, PROMETHEUS_USER, prometheusTest, startPrometheus } from '../helpers/prometheus.ts';
import type { ExecutionContext } from 'ava';

/** The version the installed binary reports, as its build info API should: `2.42.0+ds`. */
function binaryVersion(): string {
  const out = execFileSync(PROMETHEUS_BIN, ['--version'], { encoding: 'utf8' });
  return /version (\S+)/.exec(out)![1]!;
}

async function operating(t: ExecutionContext): Promise<TestApp> {
  const ta = await startApp(t);
  await makeOperating(ta);
  return ta;
}

prometheusTest('prometheus: the test reads the build info of a real server and reports its version', async (t) => {
  const prom = await startPrometheus(t);
  const ta = await operating(t);
  const res = await ta.call('POST', '/v1/connectors/test', { body: { kind: 'prometheus', settings: { url: prom.base, timeout_s: 5 } } });
  t.is(res.status, 200, prom.output());
  t.like(res.body, { ok: true, problem: null, kind: 'prometheus', timeout_s: 6, found: { version: binaryVersion() } });
  t.is(typeof res.body.found.go_version, 'string');
});

prometheusTest('prometheus: a saved connector runs instant PromQL queries and reports bad PromQL as a problem', async (t) => {
  const prom = await startPrometheus(t);
  const ta = await operating(t);
  t.is((await ta.call('PUT', '/v1/connectors/metrics', { body: { kind: 'prometheus', settings: { url: `${prom.base}/` } } })).status, 201);
  // It scrapes itself every second: wait for the first sample of `up`.
  const answer = await waitFor('the first scrape of up', async () => {
    const r = await ta.call('POST', '/v1/connectors/metrics/query', { body: { query: 'up{job="prometheus"}' } });
    return r.body.ok && r.body.data.result.length > 0 ? r.body : null;
  });
  t.is(answer.data.resultType, 'vector');
  t.like(answer.data.result[0], { metric: { __name__: 'up', job: 'prometheus' } });
  t.is(answer.data.result[0].value[1], '1');

  const at = await ta.call('POST', '/v1/connectors/metrics/query', { body: { query: 'vector(42)', at: '2026-01-01T00:00:00Z' } });
  t.deepEqual(at.body.data, { resultType: 'vector', result: [{ metric: {}, value: [1767225600, '42'] }] });

  const bad = await ta.call('POST', '/v1/connectors/metrics/query', { body: { query: 'sum(' } });
  t.is(bad.status, 200);
  t.like(bad.body, { ok: false, data: null });
  t.regex(bad.body.problem, /^Prometheus answered HTTP 400: bad_data: /);

  const checked = await ta.call('POST', '/v1/connectors/metrics/check');
  t.like(checked.body, { state: 'ok', last_problem: null, found: { version: binaryVersion() } });
});

prometheusTest('prometheus: basic auth with a write-only password, kept when left blank, never shown', async (t) => {
  const prom = await startPrometheus(t, { basicAuth: true });
  const ta = await operating(t);
  const answers: unknown[] = [];
  const settings = { url: prom.base, username: PROMETHEUS_USER.username };

  const put = await ta.call('PUT', '/v1/connectors/secured', { body: { kind: 'prometheus', settings: { ...settings, password: PROMETHEUS_USER.password } } });
  answers.push(put.body);
  t.deepEqual(put.body.settings, { ...settings, password: { set: true } });
  const checked = await ta.call('POST', '/v1/connectors/secured/check');
  answers.push(checked.body);
  t.like(checked.body, { state: 'ok', found: { version: binaryVersion() } });

  // Updated without the password: the stored one still gets in.
  answers.push((await ta.call('PUT', '/v1/connectors/secured', { body: { kind: 'prometheus', settings: { ...settings, timeout_s: 3 } } })).body);
  const again = await ta.call('POST', '/v1/connectors/secured/query', { body: { query: 'vector(1)' } });
  answers.push(again.body);
  t.like(again.body, { ok: true });

  const wrong = await ta.call('POST', '/v1/connectors/test', { body: { kind: 'prometheus', settings: { ...settings, password: 'not-the-password-xyz' } } });
  answers.push(wrong.body);
  t.like(wrong.body, { ok: false, problem: `authentication failed (HTTP 401 from ${prom.base}/api/v1/status/buildinfo); check username and password` });
  const none = await ta.call('POST', '/v1/connectors/test', { body: { kind: 'prometheus', settings: { url: prom.base } } });
  t.like(none.body, { ok: false });

  answers.push((await ta.call('GET', '/v1/connectors')).body);
  const ledger = JSON.stringify((await ta.call('GET', '/v1/ledger?limit=2000')).body);
  for (const secret of [PROMETHEUS_USER.password, 'not-the-password-xyz']) {
    t.false(JSON.stringify(answers).includes(secret), 'answers');
    t.false(ta.logs.join('\n').includes(secret), 'logs');
    t.false(ledger.includes(secret), 'ledger');
  }
});

prometheusTest('prometheus: an address where nothing listens is reported as refused', async (t) => {
  const ta = await operating(t);
  const port = await freePort();
  const res = await ta.call('POST', '/v1/connectors/test', { body: { kind: 'prometheus', settings: { url: `http://127.0.0.1:${port}` } } });
  t.like(res.body, { ok: false, problem: `cannot connect to 127.0.0.1:${port}: connection refused` });
});

/** The context the host hands a connector's call: its settings and the host's HTTP client. */
function callContext(settings: Record<string, unknown>): ConnectorContext {
  const signal = AbortSignal.timeout(10_000);
  return {
    log: { info: () => {}, warn: () => {}, error: () => {} },
    settings,
    signal,
    timeoutMs: 10_000,
    http: pluginHttp({ settings, signal, secrets: [] }),
    lib: pluginLibrary,
  };
}

prometheusTest('prometheus: range reads a matrix from a real server; a bad step, too many points and a reversed window are problems', async (t) => {
  const plugin = connector as ConnectorPluginWithCapabilities;
  const manifest = JSON.parse(readFileSync(new URL('../../plugins/connectors/prometheus/plugin.json', import.meta.url), 'utf8'));
  t.deepEqual(Object.keys(manifest.reads), ['metrics'], "the kind serves the checks' metrics capability (its manifest, plugin API 1.5)");
  const prom = await startPrometheus(t);
  const ctx = callContext({ url: prom.base, timeout_s: 5 });
  const range = (r: ConnectorRangeRequest) => plugin.range!(ctx, r);
  // Two samples of `up` at least, so the matrix has points one second apart.
  const series = await waitFor('two scrapes of up', async () => {
    const end = new Date().toISOString();
    const r = await range({ query: 'up{job="prometheus"}', start: new Date(Date.now() - 30_000).toISOString(), end, step_s: 1 });
    const data = r.data as { resultType: string; result: Array<{ metric: Record<string, string>; values: Array<[number, string]> }> };
    return r.ok && data.result.length > 0 && data.result[0]!.values.length >= 2 ? data : null;
  });
  t.is(series.resultType, 'matrix');
  t.like(series.result[0]!.metric, { __name__: 'up', job: 'prometheus' });
  const [first, second] = series.result[0]!.values;
  t.is(second![0] - first![0], 1, 'one point per step');
  t.is(first![1], '1');

  // A fixed window in the past: Prometheus answers the points of vector(3), every 15 s, ends included.
  const fixed = await range({ query: 'vector(3)', start: '2026-01-01T00:00:00Z', end: '2026-01-01T00:01:00Z', step_s: 15 });
  t.deepEqual(fixed, {
    ok: true,
    problem: null,
    data: {
      resultType: 'matrix',
      result: [{ metric: {}, values: [1767225600, 1767225615, 1767225630, 1767225645, 1767225660].map((x) => [x, '3']) }],
    },
  });

  t.like(await range({ query: 'up', start: '2026-01-01T00:00:00Z', end: '2026-01-01T01:00:00Z', step_s: 0 }), {
    ok: false,
    problem: 'step_s must be a positive number of seconds',
  });
  t.like(await range({ query: 'up', start: 'yesterday', end: '2026-01-01T01:00:00Z', step_s: 1 }), {
    ok: false,
    problem: 'start must be a time (RFC 3339, such as 2026-01-01T00:00:00Z)',
  });
  const many = await range({ query: 'up', start: '2026-01-01T00:00:00Z', end: '2026-01-02T00:00:00Z', step_s: 1 });
  t.false(many.ok);
  t.regex(many.problem!, /^Prometheus answered HTTP 400: bad_data: exceeded maximum resolution of 11,000 points per timeseries/);
  const reversed = await range({ query: 'up', start: '2026-01-02T00:00:00Z', end: '2026-01-01T00:00:00Z', step_s: 60 });
  t.regex(reversed.problem!, /^Prometheus answered HTTP 400: bad_data: invalid parameter "end": end timestamp must not be before start time$/);
  const bad = await range({ query: 'sum(', start: '2026-01-01T00:00:00Z', end: '2026-01-01T00:01:00Z', step_s: 15 });
  t.regex(bad.problem!, /^Prometheus answered HTTP 400: bad_data: /);
});
