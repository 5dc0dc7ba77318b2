import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test, { type ExecutionContext } from 'ava';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { signedIn } from '../helpers/people.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const TOKEN = 'tok-SECRET-4b1d9e77c2a0f3';
const OTHER_TOKEN = 'tok-OTHER-88aa11cc22dd33';
const FILE_TOKEN = 'tok-FROMENV-5e5e5e5e5e5e';

/** A local HTTP server standing in for the outside system; closed after the test. */
interface Probe {
  base: string;
  /** The Authorization header of every request, in order. */
  seen: Array<string | undefined>;
}
async function probe(t: ExecutionContext, handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<Probe> {
  const seen: Array<string | undefined> = [];
  const srv = createServer((req, res) => {
    seen.push(req.headers.authorization);
    handle(req, res);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))));
  return { base: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, seen };
}

const json = (res: ServerResponse, status: number, body: unknown) => (
  res.writeHead(status, { 'content-type': 'application/json' }),
  res.end(JSON.stringify(body))
);

/** Healthy on /healthz for the right bearer token; 401 otherwise; /slow never answers. */
const guarded = (token: string) => (req: IncomingMessage, res: ServerResponse) => {
  if (req.url === '/slow') return;
  if (req.headers.authorization !== `Bearer ${token}`) return json(res, 401, { error: 'unauthorized' });
  if (req.url === '/healthz') return json(res, 200, { status: 'up' });
  if (req.url?.startsWith('/orders')) return json(res, 200, { orders: 3, url: req.url });
  return json(res, 404, { error: 'no such path' });
};

/** Plugin folders under a temp dir (for SERVICE_PLUGINS_DIR), removed after the test. */
function pluginsDir(t: ExecutionContext, plugins: Record<string, { manifest: Record<string, unknown>; code: string }>): string {
  const root = mkdtempSync(path.join(tmpdir(), 'oncall-conn-plugins-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  for (const [name, p] of Object.entries(plugins)) {
    mkdirSync(path.join(root, name));
    writeFileSync(
      path.join(root, name, 'plugin.json'),
      JSON.stringify({ name, version: '1.0.0', kind: 'connector', api: '^1.0.0', entry: 'index.mjs', ...p.manifest }),
    );
    writeFileSync(path.join(root, name, 'index.mjs'), p.code);
  }
  return root;
}

const TIMEOUT_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: { timeout_s: { type: 'number' }, secret: { type: 'string', writeOnly: true } },
};
const MISBEHAVING = {
  hang: { manifest: { settings: TIMEOUT_SCHEMA }, code: 'export default { test: () => new Promise(() => {}) };\n' },
  boom: {
    manifest: { settings: TIMEOUT_SCHEMA },
    code: 'export default { test: (ctx) => { throw new Error(`exploded holding ${ctx.settings.secret}`); } };\n',
  },
  reject: { manifest: { settings: TIMEOUT_SCHEMA }, code: 'export default { test: async () => { await null; throw new TypeError("bad state"); } };\n' },
  garbage: { manifest: { settings: TIMEOUT_SCHEMA }, code: 'export default { test: () => "fine, honestly" };\n' },
  leaky: {
    manifest: { settings: TIMEOUT_SCHEMA },
    code: 'export default { test: (ctx) => { ctx.log.warn(`my secret is ${ctx.settings.secret}`, { s: ctx.settings.secret }); return { ok: false, problem: `rejected ${ctx.settings.secret}`, found: { echo: ctx.settings.secret } }; } };\n',
  },
};

async function operating(t: ExecutionContext, env: Record<string, string | undefined> = {}): Promise<TestApp> {
  const ta = await startApp(t, { env });
  await makeOperating(ta);
  return ta;
}

/** Everything a secret could leak into: the answers given, the log lines and the whole ledger. */
async function leaks(ta: TestApp, answers: unknown[], secrets: string[]): Promise<string[]> {
  const ledger = await ta.call('GET', '/v1/ledger?limit=2000');
  const texts = { answers: JSON.stringify(answers), logs: ta.logs.join('\n'), ledger: JSON.stringify(ledger.body) };
  return secrets.flatMap((s) =>
    Object.entries(texts)
      .filter(([, text]) => text.includes(s))
      .map(([where]) => `${s} in ${where}`),
  );
}

// ---- modes and roles

test('every connectors endpoint answers 503 before the install is operating', async (t) => {
  const ta = await startApp(t);
  for (const [method, p, body] of [
    ['GET', '/v1/connectors/catalogue'],
    ['GET', '/v1/connectors'],
    ['POST', '/v1/connectors/test', { kind: 'http', settings: { base_url: 'http://127.0.0.1:9' } }],
    ['PUT', '/v1/connectors/web', { kind: 'http', settings: { base_url: 'http://127.0.0.1:9' } }],
    ['DELETE', '/v1/connectors/web'],
    ['POST', '/v1/connectors/web/check'],
  ] as const) {
    const res = await ta.call(method, p, { body });
    t.is(res.status, 503, `${method} ${p}`);
    t.is(res.body.error, 'not_operating');
  }
});

test('viewers read the catalogue and the list; only admins test, save and remove', async (t) => {
  const ta = await operating(t);
  const viewer = await signedIn(ta, 'viewer@bank.example', 'viewer');
  const admin = await signedIn(ta, 'admin@bank.example', 'admin');
  t.is((await ta.call('GET', '/v1/connectors', { token: null })).status, 401);
  t.is((await ta.call('GET', '/v1/connectors/catalogue', { token: viewer })).status, 200);
  t.is((await ta.call('GET', '/v1/connectors', { token: viewer })).status, 200);
  const body = { kind: 'http', settings: { base_url: 'http://127.0.0.1:9' } };
  t.is((await ta.call('PUT', '/v1/connectors/web', { token: viewer, body })).status, 403);
  t.is((await ta.call('POST', '/v1/connectors/test', { token: viewer, body })).status, 403);
  t.is((await ta.call('PUT', '/v1/connectors/web', { token: admin, body })).status, 201);
  t.is((await ta.call('DELETE', '/v1/connectors/web', { token: viewer })).status, 403);
  t.is((await ta.call('POST', '/v1/connectors/web/check', { token: viewer })).status, 403);
  const removed = await ta.call('DELETE', '/v1/connectors/web', { token: admin });
  t.is(removed.status, 200);
  const events = (await ta.call('GET', '/v1/ledger?type=config.connector_')).body.events;
  t.deepEqual(
    events.map((e: { type: string; actor: string }) => [e.type, e.actor]),
    [
      ['config.connector_removed', 'admin@bank.example'],
      ['config.connector_saved', 'admin@bank.example'],
    ],
  );
});

// ---- catalogue

test('the catalogue lists each connector kind with its version, schema, write-only fields and capabilities', async (t) => {
  const ta = await operating(t);
  const res = await ta.call('GET', '/v1/connectors/catalogue');
  t.is(res.status, 200);
  const kinds = Object.fromEntries(res.body.kinds.map((k: { kind: string }) => [k.kind, k]));
  t.like(kinds.http, { version: '1.1.0', capabilities: ['test', 'query'] });
  t.deepEqual(kinds.http.secrets, ['bearer_token', 'runbook_token']);
  t.true(kinds.http.settings.properties.bearer_token.writeOnly);
  t.deepEqual(Object.keys(kinds.http.actions), ['runbook'], 'the action kinds it declares (plugin API 1.2)');
  t.like(kinds.http.actions.runbook, { rehearsable: true, reversible: false, params: { required: ['name'] } });
  t.deepEqual(kinds.prometheus.actions, {});
  t.deepEqual(kinds.http.settings.required, ['base_url']);
  t.like(kinds.prometheus, { version: '1.0.0', secrets: ['password'], capabilities: ['test', 'query', 'discover'] });
  t.true(kinds.prometheus.settings.properties.password.writeOnly);
  // normalisers are not connectors
  t.false('generic' in kinds);
});

// ---- add, list masked, update, remove

test('a console connector is saved with its secret encrypted, listed masked, and its secret kept when left blank', async (t) => {
  const ta = await operating(t);
  const sys = await probe(t, guarded(TOKEN));
  const answers: unknown[] = [];
  const call = async (...a: Parameters<TestApp['call']>) => {
    const r = await ta.call(...a);
    answers.push(r.body);
    return r;
  };

  const created = await call('PUT', '/v1/connectors/orders-api', {
    body: { kind: 'http', settings: { base_url: sys.base, health_path: '/healthz', bearer_token: TOKEN, timeout_s: 5 } },
  });
  t.is(created.status, 201);
  t.like(created.body, {
    name: 'orders-api',
    kind: 'http',
    source: 'console',
    version: '1.1.0',
    state: 'unchecked',
    last_problem: null,
    updated_by: 'admin-token',
  });
  t.deepEqual(created.body.settings, {
    base_url: sys.base,
    health_path: '/healthz',
    timeout_s: 5,
    bearer_token: { set: true },
    runbook_token: { set: false },
  });

  // Stored sealed: the database row holds no clear secret.
  const row = await ta.app.db('connectors').where({ name: 'orders-api' }).first();
  t.false(JSON.stringify(row).includes(TOKEN));
  t.regex(JSON.parse(row.secrets)['/bearer_token'], /^v1\./);

  const listed = await call('GET', '/v1/connectors');
  t.is(listed.status, 200);
  t.deepEqual(
    listed.body.connectors.map((c: { name: string; source: string }) => [c.name, c.source]),
    [['orders-api', 'console']],
  );
  t.deepEqual(listed.body.connectors[0].settings.bearer_token, { set: true });
  t.is(listed.body.file, null);

  // Omitted, blank and masked secrets keep the stored one: the check still gets in.
  for (const bearer of [undefined, '', { set: true }]) {
    const settings: Record<string, unknown> = { base_url: sys.base, health_path: '/healthz', timeout_s: 4 };
    if (bearer !== undefined) settings.bearer_token = bearer;
    const upd = await call('PUT', '/v1/connectors/orders-api', { body: { kind: 'http', settings } });
    t.is(upd.status, 200);
    t.deepEqual(upd.body.settings.bearer_token, { set: true });
    const checked = await call('POST', '/v1/connectors/orders-api/check');
    t.like(checked.body, { state: 'ok', last_problem: null, check: { ok: true, found: { status: 200 } } });
  }
  t.true(sys.seen.every((h) => h === `Bearer ${TOKEN}`));

  // A new secret replaces it; null clears it (and the system then refuses).
  await call('PUT', '/v1/connectors/orders-api', {
    body: { kind: 'http', settings: { base_url: sys.base, health_path: '/healthz', bearer_token: OTHER_TOKEN } },
  });
  t.like((await call('POST', '/v1/connectors/orders-api/check')).body, {
    state: 'problem',
    last_problem: `authentication failed (HTTP 401 from ${sys.base}/healthz)`,
  });
  t.is(sys.seen.at(-1), `Bearer ${OTHER_TOKEN}`);
  const cleared = await call('PUT', '/v1/connectors/orders-api', { body: { kind: 'http', settings: { base_url: sys.base, bearer_token: null } } });
  t.deepEqual(cleared.body.settings, { base_url: sys.base, bearer_token: { set: false }, runbook_token: { set: false } });
  t.is(cleared.body.state, 'unchecked', 'a save forgets the last check, which was of other settings');

  const saved = (await ta.call('GET', '/v1/ledger?type=config.connector_saved&order=asc')).body.events;
  t.is(saved.length, 4, 'the second and third keeping PUTs changed nothing, so saved nothing');
  t.like(saved[0], {
    actor: 'admin-token',
    data: {
      name: 'orders-api',
      kind: 'http',
      created: true,
      secrets_set: ['bearer_token'],
      settings: { base_url: sys.base, health_path: '/healthz', timeout_s: 5 },
    },
  });
  t.like(saved[3], { data: { created: false, secrets_set: [] } });

  t.deepEqual(await leaks(ta, answers, [TOKEN, OTHER_TOKEN]), []);
});

test('settings are validated against the kind schema, naming the field; names and kinds are checked', async (t) => {
  const ta = await operating(t);
  const put = (name: string, body: unknown) => ta.call('PUT', `/v1/connectors/${name}`, { body });
  const cases: Array<[unknown, number, string, RegExp?]> = [
    [{ kind: 'http', settings: {} }, 400, 'invalid_settings', /^settings\.base_url is required$/],
    [{ kind: 'http', settings: { base_url: 'not a url' } }, 400, 'invalid_settings', /^settings\.base_url must match (format "uri"|pattern)/],
    [{ kind: 'http', settings: { base_url: 'http://user:pw@host/' } }, 400, 'invalid_settings', /^settings\.base_url must match pattern/],
    [{ kind: 'http', settings: { base_url: 'http://h', colour: 'red' } }, 400, 'invalid_settings', /^settings: unknown field colour$/],
    [{ kind: 'http', settings: { base_url: 'http://h', timeout_s: 99 } }, 400, 'invalid_settings', /^settings\.timeout_s must be <= 15$/],
    [{ kind: 'http', settings: { base_url: 'http://h', headers: { 'X-Org': 7 } } }, 400, 'invalid_settings', /^settings\.headers\.X-Org must be string$/],
    [{ kind: 'prometheus', settings: { url: 'http://h', password: 'pw-0000' } }, 400, 'invalid_settings', /username/],
    [{ kind: 'nope', settings: {} }, 400, 'unknown_kind', /no connector plugin of kind "nope" is loaded; known kinds: [a-z, ]*http[a-z, ]*prometheus/],
    [{ kind: 'http' }, 400, 'invalid_body'],
    [{ kind: 'http', settings: { base_url: 'http://h' }, extra: 1 }, 400, 'invalid_body'],
  ];
  for (const [body, status, error, message] of cases) {
    const res = await put('web', body);
    t.is(res.status, status, JSON.stringify(body));
    t.is(res.body.error, error, JSON.stringify(body));
    if (message) t.regex(res.body.message, message);
  }
  t.false(JSON.stringify((await put('web', { kind: 'prometheus', settings: { url: 'http://h', password: 'pw-secret-zz9' } })).body).includes('pw-secret-zz9'));
  for (const bad of ['Web', '-web', 'a'.repeat(64), 'we_b', 'catalogue', 'test']) {
    const res = await put(bad, { kind: 'http', settings: { base_url: 'http://h' } });
    t.is(res.status, 400, bad);
    t.is(res.body.error, 'invalid_connector_name', bad);
  }
  t.is((await put('a'.repeat(63), { kind: 'http', settings: { base_url: 'http://h' } })).status, 201);
  t.is((await put('0-web', { kind: 'http', settings: { base_url: 'http://h' } })).status, 201);
  t.is((await ta.call('DELETE', '/v1/connectors/missing')).status, 404);
  t.is((await ta.call('GET', '/v1/connectors/missing')).status, 404);
  t.is((await ta.call('POST', '/v1/connectors/missing/check')).status, 404);
});

// ---- test: nothing saved

test('POST /v1/connectors/test checks health, reports what it found and saves nothing', async (t) => {
  const ta = await operating(t);
  const sys = await probe(t, guarded(TOKEN));
  const good = await ta.call('POST', '/v1/connectors/test', {
    body: { kind: 'http', settings: { base_url: sys.base, health_path: '/healthz', bearer_token: TOKEN } },
  });
  t.is(good.status, 200);
  t.like(good.body, {
    ok: true,
    problem: null,
    kind: 'http',
    version: '1.1.0',
    timeout_s: 15,
    found: { url: `${sys.base}/healthz`, status: 200, content_type: 'application/json' },
  });
  t.is(typeof good.body.took_ms, 'number');

  const refused = await ta.call('POST', '/v1/connectors/test', {
    body: { kind: 'http', settings: { base_url: sys.base, health_path: '/healthz', bearer_token: OTHER_TOKEN } },
  });
  t.like(refused.body, { ok: false, problem: `authentication failed (HTTP 401 from ${sys.base}/healthz)` });
  const missing = await ta.call('POST', '/v1/connectors/test', {
    body: { kind: 'http', settings: { base_url: sys.base, health_path: '/nothing', bearer_token: TOKEN } },
  });
  t.like(missing.body, { ok: false, problem: `HTTP 404 from ${sys.base}/nothing` });

  t.deepEqual((await ta.call('GET', '/v1/connectors')).body.connectors, []);
  t.is((await ta.app.db('connectors').count({ n: '*' }).first())!.n, 0);
  const tested = (await ta.call('GET', '/v1/ledger?type=connector.tested')).body.events;
  t.is(tested.length, 3);
  t.like(tested[0], { actor: 'admin-token', data: { kind: 'http', ok: false, saved_status_updated: false } });
  t.deepEqual(await leaks(ta, [good.body, refused.body, missing.body], [TOKEN, OTHER_TOKEN]), []);
});

test('testing with the name of a saved connector uses its stored secret and, when unchanged, becomes its last check', async (t) => {
  const ta = await operating(t);
  const sys = await probe(t, guarded(TOKEN));
  const settings = { base_url: sys.base, health_path: '/healthz' };
  await ta.call('PUT', '/v1/connectors/orders', { body: { kind: 'http', settings: { ...settings, bearer_token: TOKEN } } });
  const same = await ta.call('POST', '/v1/connectors/test', { body: { kind: 'http', name: 'orders', settings } });
  t.like(same.body, { ok: true });
  t.like((await ta.call('GET', '/v1/connectors/orders')).body, { state: 'ok', last_checked_at: '2026-06-01T00:00:00.000Z', found: { status: 200 } });
  // Other settings: tested with the stored secret, but the saved connector's status is left alone.
  const other = await ta.call('POST', '/v1/connectors/test', { body: { kind: 'http', name: 'orders', settings: { ...settings, health_path: '/gone' } } });
  t.like(other.body, { ok: false, problem: `HTTP 404 from ${sys.base}/gone` });
  t.like((await ta.call('GET', '/v1/connectors/orders')).body, { state: 'ok', last_problem: null });
  t.is(sys.seen.filter((h) => h !== `Bearer ${TOKEN}`).length, 0);
});

// ---- timeouts and misbehaving plugins

test('a system that never answers is cut off at the connector timeout and becomes its last problem', async (t) => {
  const ta = await operating(t);
  const sys = await probe(t, guarded(TOKEN));
  await ta.call('PUT', '/v1/connectors/slow', {
    body: { kind: 'http', settings: { base_url: sys.base, health_path: '/slow', bearer_token: TOKEN, timeout_s: 0.5 } },
  });
  // /slow never answers: the check answers at all only because it was cut off, and it names the
  // connector's 0.5 s (no wall-clock threshold here: a loaded machine stretches those).
  const res = await ta.call('POST', '/v1/connectors/slow/check');
  t.like(res.body, { state: 'problem', last_problem: `no answer from ${sys.base}/slow within 0.5 s`, check: { ok: false } });
  const listed = (await ta.call('GET', '/v1/connectors')).body.connectors[0];
  t.like(listed, { name: 'slow', state: 'problem', last_problem: `no answer from ${sys.base}/slow within 0.5 s`, last_checked_at: '2026-06-01T00:00:00.000Z' });
  const checked = (await ta.call('GET', '/v1/ledger?type=connector.checked')).body.events;
  t.like(checked[0], { data: { name: 'slow', ok: false } });
});

test('a plugin that hangs, throws, rejects or answers nonsense is cut off or reported, and the host keeps serving', async (t) => {
  const dir = pluginsDir(t, MISBEHAVING);
  const ta = await operating(t, { SERVICE_PLUGINS_DIR: dir });
  for (const kind of Object.keys(MISBEHAVING)) {
    const put = await ta.call('PUT', `/v1/connectors/${kind}-one`, { body: { kind, settings: { timeout_s: 0.2, secret: `s3cr3t-${kind}-value` } } });
    t.is(put.status, 201, kind);
  }
  // `hang` never settles: its check answers only because it is cut off, at timeout_s + 1 s as reported.
  const results = Object.fromEntries(
    await Promise.all(Object.keys(MISBEHAVING).map(async (kind) => [kind, (await ta.call('POST', `/v1/connectors/${kind}-one/check`)).body] as const)),
  );
  t.like(results.hang, { state: 'problem', last_problem: 'no answer within 1.2 s (cut off)' });
  t.like(results.boom, { state: 'problem', last_problem: 'the test failed: exploded holding [redacted]' });
  t.like(results.reject, { state: 'problem', last_problem: 'the test failed: bad state' });
  t.like(results.garbage, { state: 'problem', last_problem: 'the test answered something that is not {ok, problem}' });
  t.like(results.leaky, { state: 'problem', last_problem: 'rejected [redacted]', check: { found: { echo: '[redacted]' } } });

  // The default cut-off without timeout_s is 15 s: not waited for here, only reported.
  t.like((await ta.call('POST', '/v1/connectors/test', { body: { kind: 'garbage', settings: {} } })).body, { timeout_s: 15 });
  t.is((await ta.call('GET', '/health', { token: null })).status, 200);
  const listed = (await ta.call('GET', '/v1/connectors')).body.connectors;
  t.deepEqual(
    listed.map((c: { name: string; state: string }) => [c.name, c.state]),
    Object.keys(MISBEHAVING)
      .sort()
      .map((k) => [`${k}-one`, 'problem']),
  );
  t.deepEqual(
    await leaks(
      ta,
      [results, listed],
      Object.keys(MISBEHAVING).map((k) => `s3cr3t-${k}-value`),
    ),
    [],
  );
});

// ---- file-managed connectors

test('connectors.json connectors are listed as file-managed, use secrets from the environment, and refuse changes with 409', async (t) => {
  const sys = await probe(t, guarded(FILE_TOKEN));
  const configDir = mkdtempSync(path.join(tmpdir(), 'oncall-config-'));
  t.teardown(() => rmSync(configDir, { recursive: true, force: true }));
  process.env.ONCALL_TEST_ORDERS_TOKEN = FILE_TOKEN;
  t.teardown(() => void delete process.env.ONCALL_TEST_ORDERS_TOKEN);
  writeFileSync(
    path.join(configDir, 'connectors.json'),
    JSON.stringify({
      'orders-api': { kind: 'http', settings: { base_url: sys.base, health_path: '/healthz', bearer_token: { env: 'ONCALL_TEST_ORDERS_TOKEN' } } },
      'no-env': { kind: 'http', settings: { base_url: sys.base, bearer_token: { env: 'ONCALL_TEST_UNSET_VAR' } } },
      'bad-kind': { kind: 'ftp', settings: {} },
      'bad-settings': { kind: 'prometheus', settings: { url: 42 } },
    }),
  );
  const ta = await operating(t, { SERVICE_CONFIG_DIR: configDir });
  const listed = await ta.call('GET', '/v1/connectors');
  t.is(listed.status, 200);
  const byName = Object.fromEntries(listed.body.connectors.map((c: { name: string }) => [c.name, c]));
  t.deepEqual(Object.keys(byName), ['bad-kind', 'bad-settings', 'no-env', 'orders-api']);
  t.like(byName['orders-api'], {
    source: 'file',
    kind: 'http',
    state: 'unchecked',
    last_problem: null,
    updated_at: null,
    settings: { base_url: sys.base, bearer_token: { set: true } },
  });
  t.like(byName['no-env'], {
    source: 'file',
    state: 'problem',
    last_problem: 'connectors.json: settings.bearer_token: environment variable ONCALL_TEST_UNSET_VAR is not set',
  });
  t.like(byName['bad-kind'], { state: 'problem', last_problem: 'no connector plugin of kind "ftp" is loaded' });
  t.like(byName['bad-settings'], { state: 'problem', last_problem: 'connectors.json: settings.url must be string' });
  t.like(listed.body.file, { path: path.join(configDir, 'connectors.json'), problem: null });

  const checked = await ta.call('POST', '/v1/connectors/orders-api/check');
  t.like(checked.body, { source: 'file', state: 'ok', check: { ok: true } });
  t.deepEqual(sys.seen, [`Bearer ${FILE_TOKEN}`]);
  t.like((await ta.call('POST', '/v1/connectors/no-env/check')).body, { state: 'problem', check: null });

  for (const [method, body] of [
    ['PUT', { kind: 'http', settings: { base_url: sys.base } }],
    ['DELETE', undefined],
  ] as const) {
    const res = await ta.call(method, '/v1/connectors/orders-api', { body });
    t.is(res.status, 409, method);
    t.is(res.body.error, 'connector_file_managed');
  }
  // Other names can still be added in the console, beside the file's.
  t.is((await ta.call('PUT', '/v1/connectors/extra', { body: { kind: 'http', settings: { base_url: sys.base } } })).status, 201);
  t.deepEqual(
    (await ta.call('GET', '/v1/connectors')).body.connectors.map((c: { name: string; source: string }) => `${c.name}:${c.source}`),
    ['bad-kind:file', 'bad-settings:file', 'extra:console', 'no-env:file', 'orders-api:file'],
  );
  t.deepEqual(await leaks(ta, [listed.body, checked.body], [FILE_TOKEN]), []);
});

test('a connectors.json that is not JSON is reported, and the service starts anyway', async (t) => {
  const configDir = mkdtempSync(path.join(tmpdir(), 'oncall-config-'));
  t.teardown(() => rmSync(configDir, { recursive: true, force: true }));
  writeFileSync(path.join(configDir, 'connectors.json'), '{"web": ');
  const ta = await operating(t, { SERVICE_CONFIG_DIR: configDir });
  const listed = await ta.call('GET', '/v1/connectors');
  t.deepEqual(listed.body.connectors, []);
  t.regex(listed.body.file.problem, /^connectors\.json is not valid JSON/);
  t.true(ta.logs.some((l) => l.includes('connectors.json is not valid JSON')));
});

// ---- queries

test('a saved http connector answers read-only queries of paths under its base URL', async (t) => {
  const ta = await operating(t);
  const sys = await probe(t, guarded(TOKEN));
  await ta.call('PUT', '/v1/connectors/orders', { body: { kind: 'http', settings: { base_url: sys.base, bearer_token: TOKEN } } });
  const res = await ta.call('POST', '/v1/connectors/orders/query', { body: { query: '/orders', params: { state: 'open' } } });
  t.is(res.status, 200);
  t.like(res.body, { ok: true, problem: null, data: { status: 200, body: { orders: 3, url: '/orders?state=open' }, truncated: false } });
  t.like((await ta.call('POST', '/v1/connectors/orders/query', { body: { query: 'orders' } })).body, {
    ok: false,
    problem: 'the query is a path starting with /, such as /status',
  });
  t.is((await ta.call('POST', '/v1/connectors/orders/query', { body: {} })).body.error, 'invalid_body');
  const queried = (await ta.call('GET', '/v1/ledger?type=connector.queried&order=asc')).body.events;
  t.deepEqual(
    queried.map((e: { data: unknown }) => e.data),
    [
      { name: 'orders', kind: 'http', query: '/orders', ok: true, problem: null },
      { name: 'orders', kind: 'http', query: 'orders', ok: false, problem: 'the query is a path starting with /, such as /status' },
    ],
  );
});

// ---- the vendor example, loaded through SERVICE_PLUGINS_DIR

test('the example vendor connector loads from SERVICE_PLUGINS_DIR and works through the API', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-vendor-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  symlinkSync(path.join(REPO, 'examples', 'vendor-connector'), path.join(dir, 'statuspage'));
  const page = await probe(t, (req, res) =>
    req.headers.authorization === 'OAuth vendor-key-77aa'
      ? json(res, 200, { page: { name: 'Acme' }, status: { indicator: 'none', description: 'All Systems Operational' }, components: [] })
      : json(res, 401, {}),
  );
  const ta = await operating(t, { SERVICE_PLUGINS_DIR: dir });
  t.false(
    ta.app.plugins.broken.some((b) => b.dir.includes('statuspage')),
    JSON.stringify(ta.app.plugins.broken),
  );
  const kind = (await ta.call('GET', '/v1/connectors/catalogue')).body.kinds.find((k: { kind: string }) => k.kind === 'statuspage');
  t.like(kind, { version: '1.0.0', secrets: ['api_key'], capabilities: ['test', 'poll_alerts'] });
  const put = await ta.call('PUT', '/v1/connectors/acme-status', {
    body: { kind: 'statuspage', settings: { url: `${page.base}/api/v2/summary.json`, api_key: 'vendor-key-77aa' } },
  });
  t.is(put.status, 201);
  const checked = await ta.call('POST', '/v1/connectors/acme-status/check');
  t.like(checked.body, { state: 'ok', found: { page: 'Acme', indicator: 'none' } });
  t.is((await ta.call('POST', '/v1/connectors/acme-status/query', { body: { query: 'x' } })).body.error, 'query_not_supported');
  t.deepEqual(await leaks(ta, [put.body, checked.body], ['vendor-key-77aa']), []);
});
