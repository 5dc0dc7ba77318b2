// The `runbook` action of the http connector against a local HTTP server standing in for a
// runbook endpoint (Rundeck, AWX, Jenkins, a webhook-triggered job). Through the host's helper,
// as the acting area calls it. The token must never reach an answer or a log line, even when the
// endpoint echoes it back.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { freePort } from '../helpers/alertmanager.ts';
import { actionHost, actionRequest, type ActionHost } from '../helpers/connector-actions.ts';

const TOKEN = 'rb-TOKEN-5f3e2d1c0b9a8877';
const PROBE_TOKEN = 'probe-TOKEN-aa11bb22cc33';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

/** The runbook endpoint: records every request; answers by path, echoing the Authorization header back. */
async function endpoint(t: ExecutionContext): Promise<{ base: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: text === '' ? null : JSON.parse(text) });
      const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => (
        res.writeHead(status, { 'content-type': 'application/json', ...headers }),
        res.end(JSON.stringify(body))
      );
      if (req.url === '/fail') return reply(500, { error: 'job crashed', auth: req.headers.authorization });
      if (req.url === '/moved') return reply(302, {}, { location: 'https://elsewhere.example/jobs' });
      if (req.headers.authorization !== `Bearer ${TOKEN}` && req.headers.authorization !== `Bearer ${PROBE_TOKEN}`)
        return reply(401, { error: 'who are you', auth: req.headers.authorization ?? null });
      reply(202, { execution: 17, dry_run: (JSON.parse(text) as { dry_run: boolean }).dry_run, auth: req.headers.authorization });
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))));
  return { base: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, seen };
}

async function host(t: ExecutionContext, base: string, extra: Record<string, unknown> = {}): Promise<ActionHost> {
  return actionHost(
    t,
    {
      jobs: {
        kind: 'http',
        settings: { base_url: `${base}/`, runbook_path: '/jobs/restart', runbook_token: { env: 'RB_TOKEN' }, headers: { 'X-Tenant': 'bank' }, ...extra },
      },
    },
    { env: { RB_TOKEN: TOKEN, PROBE_TOKEN } },
  );
}

const runbook = (params: Record<string, unknown>) => actionRequest('runbook', params, 'ep-1/runbook/restart');

const EPISODE = {
  id: 'ep-1',
  service: 'payments',
  alerts: ['PaymentsDown'],
  url: 'https://oncall.bank.example/episodes/ep-1',
  summary: 'payments is down: target-down holds',
};

test('runbook: act POSTs the episode to runbook_path with the token, the headers and the key; 2xx is success', async (t) => {
  const ep = await endpoint(t);
  const h = await host(t, ep.base);
  const r = await h.connectors.act('jobs', runbook({ name: 'restart' }));
  t.like(r, {
    call: 'act',
    ok: true,
    reason: null,
    undo: null,
    shown: `ran runbook restart: HTTP 202 from ${ep.base}/jobs/restart: {"execution":17,"dry_run":false,"auth":"Bearer [redacted]"}`,
  });
  t.is(ep.seen.length, 1);
  const [req] = ep.seen;
  t.like(req, { method: 'POST', url: '/jobs/restart' });
  t.deepEqual(req!.body, { runbook: 'restart', episode: EPISODE, key: 'ep-1/runbook/restart', dry_run: false });
  t.like(req!.headers, {
    authorization: `Bearer ${TOKEN}`,
    'content-type': 'application/json',
    'x-tenant': 'bank',
    'idempotency-key': 'ep-1/runbook/restart',
  });
});

test('runbook: the method, the path param and the token fallback come from the settings', async (t) => {
  const ep = await endpoint(t);
  const put = await host(t, ep.base, { runbook_method: 'PUT' });
  t.like(await put.connectors.act('jobs', runbook({ name: 'restart', path: '/api/v2/job_templates/7/launch/' })), { ok: true });
  t.like(ep.seen[0], { method: 'PUT', url: '/api/v2/job_templates/7/launch/' });
  // No runbook_token: the probes' bearer_token is sent.
  const fallback = await actionHost(
    t,
    { jobs: { kind: 'http', settings: { base_url: ep.base, runbook_path: '/jobs/restart', bearer_token: { env: 'PROBE_TOKEN' } } } },
    { env: { PROBE_TOKEN } },
  );
  t.like(await fallback.connectors.act('jobs', runbook({ name: 'restart' })), { ok: true });
  t.is(ep.seen[1]!.headers.authorization, `Bearer ${PROBE_TOKEN}`);
  // Neither: no Authorization header at all, and the endpoint's 401 is the problem.
  const bare = await actionHost(t, { jobs: { kind: 'http', settings: { base_url: ep.base } } });
  const refused = await bare.connectors.act('jobs', runbook({ name: 'restart' }));
  t.like(refused, { ok: false, reason: 'said_no', problem: `authentication failed (HTTP 401 from ${ep.base}/); check runbook_token` });
  t.is(ep.seen[2]!.headers.authorization, undefined);
  t.is(ep.seen[2]!.url, '/', 'runbook_path defaults to /');
});

test('runbook: rehearsal sends dry_run: true only when the endpoint declares dry runs', async (t) => {
  const ep = await endpoint(t);
  const plain = await host(t, ep.base);
  t.like(await plain.connectors.rehearse('jobs', runbook({ name: 'restart' })), {
    call: 'rehearse',
    ok: false,
    reason: 'said_no',
    problem: 'not rehearsable: the endpoint does not declare dry runs',
  });
  t.is(ep.seen.length, 0, 'nothing sent');
  const dry = await host(t, ep.base, { runbook_dry_run: true });
  const r = await dry.connectors.rehearse('jobs', runbook({ name: 'restart' }));
  t.like(r, {
    ok: true,
    shown: `dry run of runbook restart: HTTP 202 from ${ep.base}/jobs/restart: {"execution":17,"dry_run":true,"auth":"Bearer [redacted]"}`,
  });
  t.deepEqual(ep.seen[0]!.body, { runbook: 'restart', episode: EPISODE, key: 'ep-1/runbook/restart', dry_run: true });
  t.like(ep.seen[0], { method: 'POST', url: '/jobs/restart' });
});

test('runbook: a failing endpoint, a redirect or an unreachable one is a failure; it cannot be undone', async (t) => {
  const ep = await endpoint(t);
  const h = await host(t, ep.base);
  const failed = await h.connectors.act('jobs', runbook({ name: 'restart', path: '/fail' }));
  t.like(failed, {
    ok: false,
    reason: 'said_no',
    problem: `runbook restart failed: HTTP 500 from ${ep.base}/fail: {"error":"job crashed","auth":"Bearer [redacted]"}`,
  });
  const moved = await h.connectors.act('jobs', runbook({ name: 'restart', path: '/moved' }));
  t.like(moved, { ok: false, reason: 'said_no' });
  t.regex(moved.problem!, /redirects \(HTTP 302\) to https:\/\/elsewhere\.example\/jobs/);
  t.is(ep.seen.length, 2, 'the redirect was not followed');
  t.like(await h.connectors.act('jobs', runbook({ name: 'rm -rf /' })), { ok: false, reason: 'invalid_params' });
  t.like(await h.connectors.act('jobs', runbook({ name: 'restart', path: 'jobs' })), { ok: false, reason: 'invalid_params' });
  t.like(await h.connectors.undo('jobs', { ...runbook({ name: 'restart' }), undo: {} }), {
    ok: false,
    reason: 'not_declared',
    problem: 'runbook on connectors of kind http cannot be undone',
  });
  const kinds = await h.connectors.actionKinds();
  t.like(kinds[0]!.actions.runbook, { rehearsable: true, reversible: false, problem: null });
  const port = await freePort();
  const gone = await host(t, `http://127.0.0.1:${port}`);
  const unreachable = await gone.connectors.act('jobs', runbook({ name: 'restart' }));
  t.like(unreachable, { ok: false, reason: 'said_no', problem: `cannot connect to 127.0.0.1:${port}: connection refused` });
});

test('runbook: the token is never in an answer or a log line, even when the endpoint echoes it', async (t) => {
  const ep = await endpoint(t);
  const h = await host(t, ep.base, { runbook_dry_run: true });
  const answers = [
    await h.connectors.rehearse('jobs', runbook({ name: 'restart' })),
    await h.connectors.act('jobs', runbook({ name: 'restart' })),
    await h.connectors.act('jobs', runbook({ name: 'restart', path: '/fail' })),
    await h.connectors.actionKinds(),
    h.connectors.kinds.catalogue(),
  ];
  t.true(
    ep.seen.every((s) => s.headers.authorization === `Bearer ${TOKEN}`),
    'the token was sent',
  );
  t.true(h.logs.length > 0);
  const base64 = Buffer.from(TOKEN, 'utf8').toString('base64').replace(/=+$/, '');
  for (const [where, text] of [
    ['answers', JSON.stringify(answers)],
    ['logs', h.logs.join('\n')],
  ] as const) {
    t.false(text.includes(TOKEN), `the token is in the ${where}`);
    t.false(text.includes(base64), `the token's base64 is in the ${where}`);
  }
  t.true(JSON.stringify(answers).includes('Bearer [redacted]'), 'the echo was blanked, not dropped');
});
