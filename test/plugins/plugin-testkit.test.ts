// The plugin test kit itself (host/plugins/testkit.ts, offered through the contract module):
// what the contract suite and plugin folders' own tests rely on. See docs/plugins.md.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test, { type TestFn } from 'ava';
import {
  checkCase,
  connectorCases,
  connectorContext,
  loadPluginFolder,
  nothingListening,
  packScenarios,
  recordedServer,
  testNeeding,
} from '../../host/plugins/contract.ts';

const FIXTURES = fileURLToPath(new URL('../fixtures/plugins/', import.meta.url));
const PACKS = fileURLToPath(new URL('../../packs/', import.meta.url));

test('loadPluginFolder loads a folder through the host loader, and throws the loader problem for a broken one', async (t) => {
  const good = await loadPluginFolder(FIXTURES + 'good-connector');
  t.like(good, { name: 'good-connector', kind: 'connector', version: '2.1.0' });
  t.is(typeof (good.plugin as { test: unknown }).test, 'function');
  await t.throwsAsync(loadPluginFolder(FIXTURES + 'imports-outside'), {
    message: /imports "\.\.\/good-normaliser\/index\.ts", which is outside the plugin folder/,
  });
  await t.throwsAsync(loadPluginFolder(FIXTURES + 'no-such-folder'), { message: /no plugin folder \(plugin\.json\) at / });
});

test('recordedServer answers the recorded answer of a method and path (200 unless it says), 404 otherwise, and keeps the requests without credentials', async (t) => {
  const s = await recordedServer([
    { path: '/ok', body: { fine: true } },
    { method: 'POST', path: '/made', status: 201, body: 'created', headers: { 'x-id': '7' } },
  ]);
  t.teardown(() => s.close());
  const ok = await fetch(`${s.url}/ok?a=1`, { headers: { authorization: 'Bearer the-token-0123456789' } });
  t.is(ok.status, 200);
  t.deepEqual(await ok.json(), { fine: true });
  const made = await fetch(`${s.url}/made`, { method: 'POST' });
  t.is(made.status, 201);
  t.is(made.headers.get('x-id'), '7');
  t.is(await made.text(), 'created');
  t.is((await fetch(`${s.url}/made`)).status, 404, 'the method is compared too');
  t.like(s.requests[0], { method: 'GET', path: '/ok', query: { a: '1' }, auth: 'Bearer', body: null });
  t.like(s.requests[1], { method: 'POST', path: '/made', query: {}, auth: null, body: null });
  t.like(s.requests[2], { method: 'GET', path: '/made', query: {}, auth: null, body: null });
  t.false('authorization' in s.requests[0]!.headers, 'the credentials are not kept');
  t.false(JSON.stringify(s.requests).includes('the-token'));
  const posted = await fetch(`${s.url}/made`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sign': 'sha256=ab' }, body: '{"a":[1]}' });
  t.is(posted.status, 201);
  await fetch(`${s.url}/made`, { method: 'POST', headers: { 'content-type': 'text/plain', cookie: 'session=the-cookie' }, body: 'plain words' });
  t.like(s.requests[3], { headers: { 'content-type': 'application/json', 'x-sign': 'sha256=ab' }, body: { a: [1] } });
  t.like(s.requests[4], { body: 'plain words' });
  t.false('cookie' in s.requests[4]!.headers);
});

test('connectorContext is the host context: its HTTP client words a failure for a person, and the log keeps its lines', async (t) => {
  const s = await recordedServer([]);
  await s.close();
  const ctx = connectorContext({ url: s.url });
  const r = await ctx.http.request({ url: `${s.url}/api` });
  t.false(r.ok);
  t.regex((r as { problem: string }).problem, /^cannot connect to 127\.0\.0\.1:\d+: connection refused$/);
  ctx.log.info('read', { n: 1 });
  t.deepEqual(ctx.lines, ['read {"n":1}']);
});

test('packScenarios gives each cause of a shipped pack with its scenarios, and replay reaches the verdict recorded', async (t) => {
  const { causes, scenarios, unknownCauses } = await packScenarios(PACKS + 'http');
  t.deepEqual(
    causes.map((c) => c.id),
    ['http/endpoint-down'],
  );
  t.deepEqual(unknownCauses, []);
  t.true(scenarios.length >= 3);
  for (const s of scenarios) t.is((await s.replay()).verdict, s.scenario.expect.verdict, s.scenario.name);
});

/**
 * A connector written for this test in a folder of its own: every call POSTs (GETs for the
 * reads) what it was handed to `url` with the token as a bearer, and answers the status it got;
 * `act` also echoes the answer's body, so a case can make it leak the token.
 */
const ECHO_CONNECTOR = `
const send = async (ctx, call, request) => {
  const r = await ctx.http.request({
    method: call === 'test' || call === 'pollAlerts' ? 'GET' : 'POST',
    url: ctx.settings.url + '/' + call,
    auth: { bearer: ctx.settings.token },
    ...(request === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(request) }),
  });
  return r.ok ? r : { ok: false, status: 0, text: r.problem };
};
export default {
  test: async (ctx) => ({ ok: (await send(ctx, 'test')).status === 200, problem: null }),
  pollAlerts: async (ctx) => JSON.parse((await send(ctx, 'pollAlerts')).text),
  notify: async (ctx, m) => ({ ok: (await send(ctx, 'notify', m)).status === 202, problem: null }),
  rehearse: async (ctx, a) => ({ ok: true, problem: null, shown: 'would ' + a.kind + ' ' + (await send(ctx, 'rehearse', a)).status }),
  act: async (ctx, a) => { const r = await send(ctx, 'act', a); return { ok: r.ok, problem: r.ok ? null : r.text, shown: r.text, undo: { id: a.key } }; },
  undo: async (ctx, a) => ({ ok: (await send(ctx, 'undo', a)).status === 200, problem: null, shown: 'undid ' + a.undo.id }),
};
`;

const ECHO_MANIFEST = {
  name: 'echo',
  version: '1.0.0',
  kind: 'connector',
  api: '^1.2.0',
  entry: 'index.ts',
  description: 'Test: echoes every call to its url.',
  settings: {
    type: 'object',
    additionalProperties: false,
    required: ['url', 'token'],
    properties: {
      url: { type: 'string', description: 'Where.' },
      token: { type: 'string', writeOnly: true, description: 'The token.' },
    },
  },
  actions: {
    restart: {
      description: 'Restarts.',
      params: { type: 'object', additionalProperties: false, properties: {} },
      rehearsable: true,
      reversible: true,
    },
  },
};

const TOKEN = 'echo-token-0123456789abcdef';
const ACTION = { kind: 'restart', params: {}, episode: { id: 'ep-1', service: 'orders', alerts: ['Down'], url: null, summary: 'down' }, key: 'k-1' };

function echoFolder(cases: Record<string, unknown>): string {
  const root = mkdtempSync(path.join(tmpdir(), 'oncall-testkit-'));
  const dir = path.join(root, 'echo');
  mkdirSync(path.join(dir, 'fixtures'), { recursive: true });
  writeFileSync(path.join(dir, 'plugin.json'), JSON.stringify(ECHO_MANIFEST));
  writeFileSync(path.join(dir, 'index.ts'), ECHO_CONNECTOR);
  for (const [f, doc] of Object.entries(cases))
    writeFileSync(path.join(dir, 'fixtures', f), JSON.stringify({ settings: { url: '{{server}}', token: TOKEN }, ...(doc as object) }));
  return root;
}

const settled = echoFolder({
  'a-notify.json': {
    call: 'notify',
    request: { event: 'incident.opened', episode: { id: 'ep-1' }, sent_at: '2026-11-24T08:00:00.000Z' },
    answers: [{ method: 'POST', path: '/notify', status: 202 }],
    expect: { ok: true, problem: null },
    requests: [{ method: 'POST', path: '/notify', auth: 'Bearer', body: { event: 'incident.opened', episode: { id: 'ep-1' } } }],
  },
  'b-rehearse.json': {
    call: 'rehearse',
    request: ACTION,
    answers: [{ method: 'POST', path: '/rehearse' }],
    expect: { ok: true, problem: null, shown: 'would restart 200' },
  },
  'c-act.json': {
    call: 'act',
    request: ACTION,
    answers: [{ method: 'POST', path: '/act', body: 'restarted' }],
    expect: { ok: true, problem: null, shown: 'restarted', undo: { id: 'k-1' } },
  },
  'd-undo.json': {
    call: 'undo',
    request: { ...ACTION, undo: { id: 'k-1' } },
    answers: [{ method: 'POST', path: '/undo' }],
    expect: { ok: true, problem: null, shown: 'undid k-1' },
    requests: [{ body: { key: 'k-1', undo: { id: 'k-1' } } }],
  },
  'e-poll.json': {
    call: 'pollAlerts',
    answers: [{ path: '/pollAlerts', body: [{ name: 'Down', took_ms: 3, id: 'a1' }] }],
    expect: [{ name: 'Down', took_ms: '{{number}}', id: '{{string}}' }],
  },
  'f-act-echoes-the-token.json': {
    call: 'act',
    request: ACTION,
    answers: [{ method: 'POST', path: '/act', body: `token ${TOKEN}` }],
    expect: { ok: true, problem: null, shown: `token ${TOKEN}`, undo: { id: 'k-1' } },
  },
  // A URL that is refused before any request, with the token in its path: the problem names the path.
  'g-refused.json': { call: 'act', request: ACTION, answers: [], expect: null, settings: { url: `http://127.0.0.1:1/${TOKEN}`, token: TOKEN } },
});
test.after.always(() => rmSync(settled, { recursive: true, force: true }));

test('connectorCases runs notify, rehearse, act, undo and pollAlerts with their requests, and the requests sent keep their bodies', async (t) => {
  const cases = connectorCases(path.join(settled, 'echo'));
  t.deepEqual(
    cases.map((c) => c.name),
    ['a-notify', 'b-rehearse', 'c-act', 'd-undo', 'e-poll', 'f-act-echoes-the-token', 'g-refused'],
  );
  for (const c of cases.slice(0, 5)) await checkCase(t, c);
  const { requests } = await cases[2]!.run();
  t.like(requests[0], { method: 'POST', path: '/act', auth: 'Bearer', headers: { 'content-type': 'application/json' }, body: ACTION });
  t.false(JSON.stringify(requests).includes(TOKEN), 'the bearer token is not kept');
});

test('"{{number}}" and "{{string}}" in what a case expects stand for any number or string there, and nothing else', async (t) => {
  const root = echoFolder({
    'a.json': {
      call: 'pollAlerts',
      answers: [{ path: '/pollAlerts', body: [{ took_ms: '3', id: 7 }] }],
      expect: [{ took_ms: '{{number}}', id: '{{string}}' }],
    },
  });
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const { got, expected } = await connectorCases(path.join(root, 'echo'))[0]!.run();
  t.deepEqual(got, [{ took_ms: '3', id: 7 }]);
  t.deepEqual(expected, [{ took_ms: '{{number}}', id: '{{string}}' }], 'a string is no number, a number no string');
});

test('a case whose answer shows a secret setting is a leak, and a connection problem is scrubbed of it as the host does', async (t) => {
  const cases = connectorCases(path.join(settled, 'echo'));
  const echoed = await cases[5]!.run();
  t.deepEqual(echoed.got, echoed.expected);
  t.deepEqual(echoed.leaked, ['/token']);
  const failures: string[] = [];
  await checkCase(
    { deepEqual: (a, b, m) => void (JSON.stringify(a) === JSON.stringify(b) || failures.push(m ?? 'deepEqual')), is: () => true, like: () => true },
    cases[5]!,
  );
  t.deepEqual(failures, ['no secret setting shows in the answer or in a log line']);
  const refused = await cases[6]!.run();
  t.like(refused.got, { ok: false, problem: 'cannot reach http://127.0.0.1:1/[redacted]/act: bad port' });
  t.deepEqual(refused.leaked, []);
});

test('a case with an unknown call or without the request its call needs is refused', async (t) => {
  const root = echoFolder({
    'a.json': { call: 'discover', answers: [], expect: null },
    'b.json': { call: 'act', answers: [], expect: null },
  });
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const [unknown, bare] = connectorCases(path.join(root, 'echo'));
  await t.throwsAsync(unknown!.run(), { message: 'unknown call "discover": test, pollAlerts, query, range, notify, rehearse, act or undo' });
  await t.throwsAsync(bare!.run(), { message: 'a act case needs its request' });
});

test('testNeeding runs a test whose peer is there, skips it with the reason when it is missing, and fails it under CI=true', (t) => {
  const declared: string[] = [];
  const declare = Object.assign((title: string) => void declared.push(`run ${title}`), {
    skip: (title: string) => void declared.push(`skip ${title}`),
  }) as unknown as TestFn;
  const ci = process.env.CI;
  t.teardown(() => (ci === undefined ? delete process.env.CI : (process.env.CI = ci)));
  delete process.env.CI;
  testNeeding(declare, null, 'reads', async () => {});
  testNeeding(declare, 'no git binary', 'reads', async () => {});
  process.env.CI = 'true';
  testNeeding(declare, 'no git binary', 'reads', async () => {});
  t.deepEqual(declared, ['run reads', 'skip reads (skipped: no git binary)', 'run reads']);
});

test('nothingListening is null for a port that accepts connections, and says why for one that does not', async (t) => {
  const s = await recordedServer([]);
  const port = Number(new URL(s.url).port);
  t.is(await nothingListening('the peer', '127.0.0.1', port), null);
  await s.close();
  t.is(await nothingListening('the peer', '127.0.0.1', port), `the peer not reachable at 127.0.0.1:${port} (ECONNREFUSED)`);
});
