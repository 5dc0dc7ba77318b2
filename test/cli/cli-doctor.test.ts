import test from 'ava';
import { ADMIN_TOKEN, INGEST_TOKEN, startApp, type TestApp } from '../helpers/app.ts';
import { json, oncall } from '../helpers/cli.ts';
import { closedPort } from '../helpers/ports.ts';

// `oncall doctor` must not contradict the service's own report: it asks the running service
// (GET /v1/doctor) and, when it cannot, says that it judged its own process's environment.

const portOf = (ta: TestApp) => new URL(ta.base).port;
const tokensOf = (report: { checks: Array<{ name: string; level: string; detail: string }> }) => report.checks.find((c) => c.name === 'tokens')!;

test('GET /v1/doctor says it judges the running service, and its tokens check says whose environment it read', async (t) => {
  const ta = await startApp(t);
  const res = await ta.call('GET', '/v1/doctor');
  t.is(res.body.judged_by, 'service');
  t.regex(res.body.judged, /^the running service \(process \d+\)/);
  t.regex(
    tokensOf(res.body).detail,
    /^judged by the running service's environment: admin token set by SERVICE_ADMIN_TOKEN; ingest token set by SERVICE_INGEST_TOKEN$/,
  );
});

test('a service without an ingest token says so in its own words', async (t) => {
  const ta = await startApp(t, { env: { SERVICE_INGEST_TOKEN: undefined } });
  const tokens = tokensOf((await ta.call('GET', '/v1/doctor')).body);
  t.is(tokens.level, 'warn');
  t.regex(tokens.detail, /ingest disabled: the service has no SERVICE_INGEST_TOKEN/);
});

test("oncall doctor reports the running service's view, so a CLI shell without the ingest token does not claim ingest is disabled", async (t) => {
  const ta = await startApp(t);
  const env = { ...ta.env, SERVICE_INGEST_TOKEN: undefined, SERVICE_PORT: portOf(ta) };
  const res = await oncall(['doctor', '--json'], env);
  t.is(res.code, 0, res.stdout + res.stderr);
  const report = json(res);
  t.like(report, { ok: true, judged_by: 'service', service_url: ta.base, service_problem: null });
  t.like(tokensOf(report), { level: 'ok' });
  t.notRegex(tokensOf(report).detail, /disabled|unset/);
  t.true(
    ta.logs.some((l) => l.includes('/v1/doctor')),
    'the service was asked (its request log shows it)',
  );
  const human = await oncall(['doctor'], env);
  t.is(human.code, 0);
  t.regex(human.stdout, new RegExp(`^Report of the running service at ${ta.base} \\(GET /v1/doctor\\): it judges the running service`));
  t.notRegex(human.stdout, /ingest disabled/);
  t.false(human.stdout.includes(INGEST_TOKEN) || human.stdout.includes(ADMIN_TOKEN), 'no token is printed');
});

test("with no service answering, oncall doctor judges its own process's environment and says so", async (t) => {
  const ta = await startApp(t);
  const port = await closedPort();
  const env = { ...ta.env, SERVICE_INGEST_TOKEN: undefined, SERVICE_PORT: String(port) };
  const report = json(await oncall(['doctor', '--json'], env));
  t.like(report, { judged_by: 'cli', service_url: null });
  t.regex(report.service_problem, new RegExp(`No service answers at http://127\\.0\\.0\\.1:${port}`));
  t.regex(report.judged, /^this CLI process \(process \d+\)/);
  t.like(tokensOf(report), { level: 'warn' });
  t.regex(
    tokensOf(report).detail,
    /^judged by this CLI process's environment \(not the running service's\): .*SERVICE_INGEST_TOKEN is unset here; ingest is disabled only if the service lacks it too/,
  );
  const human = await oncall(['doctor'], env);
  t.regex(human.stdout, /^No service answers at .*\nJudged by this CLI process/);
});

test("a service that refuses the CLI's admin token is not taken for this install's: the CLI judges itself and says why", async (t) => {
  const ta = await startApp(t, { env: { SERVICE_ADMIN_TOKEN: 'another-admin-token-0123456789abcdefghij' } });
  const report = json(await oncall(['doctor', '--json'], { ...ta.env, SERVICE_ADMIN_TOKEN: ADMIN_TOKEN, SERVICE_PORT: portOf(ta) }));
  t.is(report.judged_by, 'cli');
  t.regex(report.service_problem, /refused the admin token this CLI has \(401\)/);
});

test('without an admin token the CLI cannot read the service report: it says the service runs and that it judged itself', async (t) => {
  const ta = await startApp(t, { env: { SERVICE_ADMIN_TOKEN: undefined } });
  const report = json(await oncall(['doctor', '--json'], { ...ta.env, SERVICE_PORT: portOf(ta) }));
  t.is(report.judged_by, 'cli');
  t.regex(report.service_problem, /answers, but its report \(GET \/v1\/doctor\) needs the admin token and SERVICE_ADMIN_TOKEN is unset here \(pass --token\)/);
  const withFlag = json(await oncall(['doctor', '--json', '--token', ta.app.adminTokenToPrint!], { ...ta.env, SERVICE_PORT: portOf(ta) }));
  t.is(withFlag.judged_by, 'service', '--token reads the service report');
});

test('--local never asks the service', async (t) => {
  const ta = await startApp(t);
  const report = json(await oncall(['doctor', '--local', '--json'], { ...ta.env, SERVICE_PORT: portOf(ta) }));
  t.like(report, { judged_by: 'cli', service_url: null, service_problem: null });
  t.false(
    ta.logs.some((l) => l.includes('/v1/doctor')),
    'the service saw no doctor request',
  );
});
