import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import { INGEST_TOKEN, signLicence, testVendor } from '../helpers/app.ts';
import { mariadbMissing } from '../helpers/db.ts';
import { testNeeding } from '../helpers/needs.ts';
import { startHostProcesses, type HostProcess } from '../helpers/host-process.ts';

/*
 * Two host processes (`node host/main.ts`) on one MariaDB database, every service at L2 through
 * autonomy.json and its remedy safe for L2: each episode's action runs exactly once, whichever
 * host takes the path's steps (the lease on `action_paths`).
 */

const ADMIN_TOKEN = 'admin-token-for-acting-processes-0123456789';

async function call(h: HostProcess, method: string, route: string, opts: { token?: string; body?: unknown } = {}): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${opts.token ?? ADMIN_TOKEN}` };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(h.base + route, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : JSON.parse(text) };
}

const SERVICES = Array.from({ length: 8 }, (_, i) => `jobs-${i}`);
/** The service whose restart never answers. */
const HANGS = 'jobs-hang';

/** Two hosts on one MariaDB with the fixer vendor, every service at L2 (restart safe for L2), an owner, and the connector. */
async function twoHosts(t: ExecutionContext): Promise<{ one: HostProcess; two: HostProcess; hosts: HostProcess[]; acted: () => string[] }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-acting-hosts-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const log = path.join(dir, 'actions.log');
  const plugins = path.join(dir, 'plugins');
  const config = path.join(dir, 'config');
  mkdirSync(path.join(plugins, 'fixpack'), { recursive: true });
  mkdirSync(path.join(plugins, 'fixer'), { recursive: true });
  mkdirSync(config);
  writeFileSync(path.join(config, 'autonomy.json'), JSON.stringify({ services: Object.fromEntries([...SERVICES, HANGS].map((s) => [s, 'L2'])) }));
  writeFileSync(
    path.join(plugins, 'fixpack', 'plugin.json'),
    JSON.stringify({ name: 'fixpack', version: '1.0.0', kind: 'pack', api: '^1.2.0', entry: 'index.mjs' }),
  );
  writeFileSync(
    path.join(plugins, 'fixpack', 'index.mjs'),
    `export default { causes: [{ id: 'fixpack/stuck', title: 'Stuck', specificity: 95, applies: { alerts: ['WorkerStuck'] }, reads: [],
      check: (ctx) => ({ verdict: 'holds', reason: 'stuck', evidence: [{ source: 'signals', kind: 'x', query: 'q', at: ctx.at, observed: 1, excerpt: 'stuck' }],
        remedy: { action: 'restart', params: { target: ctx.service.name } } }) }] };`,
  );
  writeFileSync(
    path.join(plugins, 'fixer', 'plugin.json'),
    JSON.stringify({
      name: 'fixer',
      version: '1.0.0',
      kind: 'connector',
      api: '^1.2.0',
      entry: 'index.mjs',
      settings: {
        type: 'object',
        additionalProperties: false,
        required: ['log'],
        properties: { log: { type: 'string', description: 'where actions are written' } },
      },
      actions: {
        restart: {
          description: 'restarts a target',
          params: { type: 'object', additionalProperties: false, required: ['target'], properties: { target: { type: 'string' } } },
          rehearsable: false,
          reversible: true,
        },
      },
    }),
  );
  writeFileSync(
    path.join(plugins, 'fixer', 'index.mjs'),
    `import { appendFileSync } from 'node:fs';
export default {
  test: () => ({ ok: true, problem: null }),
  act: async (ctx, a) => {
    // The call that never ends: the host taking it is killed during it (its pid written first).
    if (a.params.target === '${HANGS}') { appendFileSync(ctx.settings.log, 'called ${HANGS} by ' + process.pid + '\\n'); return new Promise(() => {}); }
    await new Promise((r) => setTimeout(r, 100)); appendFileSync(ctx.settings.log, a.params.target + '\\n'); return { ok: true, problem: null, shown: 'restarted', undo: { t: 1 } }; },
  undo: () => ({ ok: true, problem: null }),
};`,
  );
  const hosts = await startHostProcesses(t, 2, {
    SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
    SERVICE_INGEST_TOKEN: INGEST_TOKEN,
    SERVICE_SECRET_KEY: 'secret-key-shared-by-both-acting-hosts-0123456',
    SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
    SERVICE_LICENCE_CHECK: 'offline',
    SERVICE_DEBOUNCE_S: '1',
    SERVICE_PLUGINS_DIR: plugins,
    SERVICE_CONFIG_DIR: config,
  });
  const [one, two] = hosts as [HostProcess, HostProcess];
  t.is((await call(one, 'POST', '/v1/licence', { body: { licence: signLicence() } })).status, 200);
  t.is((await call(one, 'POST', '/v1/auth/bootstrap', { body: { email: 'owner@bank.example', name: 'Owner' } })).status, 201);
  const policy = (await call(one, 'GET', '/v1/policy')).body;
  const { version: _v, source: _s, updated_at: _u, updated_by: _b, ...doc } = policy;
  t.is((await call(one, 'PUT', '/v1/policy', { body: { ...doc, safe_for_l2: ['restart'], max_actions_per_service_per_hour: 100 } })).status, 200);
  t.is((await call(two, 'PUT', '/v1/connectors/fix', { body: { kind: 'fixer', settings: { log } } })).status, 201);
  const acted = () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : []);
  return { one, two, hosts, acted };
}

const missing = await mariadbMissing();

testNeeding(missing, 'two host processes on one MariaDB take each action once', async (t) => {
  t.timeout(120_000);
  const { one, two, hosts, acted } = await twoHosts(t);
  await Promise.all(
    SERVICES.map((s, i) =>
      call(hosts[i % 2]!, 'POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name: 'WorkerStuck', service: s, severity: 'critical', id: s } }),
    ),
  );
  for (let i = 0; i < 240 && acted().length < SERVICES.length; i++) await new Promise((r) => setTimeout(r, 250));
  // Both hosts keep passing over the paths for a while: nothing may run twice.
  await new Promise((r) => setTimeout(r, 3000));
  t.deepEqual([...acted()].sort(), [...SERVICES].sort(), `each action once (${one.output()}${two.output()})`);
  const executed = (await call(one, 'GET', '/v1/ledger?type=action.executed&limit=100')).body.events as any[];
  t.is(executed.length, SERVICES.length);
  t.true((await call(two, 'GET', '/v1/ledger/verify')).body.ok);
});

testNeeding(missing, 'after a resume, two host processes propose each fix the halt held back once, and each runs once', async (t) => {
  t.timeout(120_000);
  const { one, two, hosts, acted } = await twoHosts(t);
  t.is((await call(one, 'POST', '/v1/halt', { body: { by: 'owner@bank.example', reason: 'change freeze' } })).status, 200);
  await Promise.all(
    SERVICES.map((s, i) =>
      call(hosts[i % 2]!, 'POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name: 'WorkerStuck', service: s, severity: 'critical', id: s } }),
    ),
  );
  // Halted: every path decides to abstain and escalates, held back by the halt.
  const escalated = async () => ((await call(one, 'GET', '/v1/ledger?type=outcome.escalated&limit=100')).body.events as any[]).length;
  for (let i = 0; i < 240 && (await escalated()) < SERVICES.length; i++) await new Promise((r) => setTimeout(r, 250));
  t.is(await escalated(), SERVICES.length, `${one.output()}${two.output()}`);
  t.deepEqual(acted(), [], 'nothing runs while halted');
  t.is((await call(two, 'POST', '/v1/resume', { body: { by: 'owner@bank.example' } })).status, 200);
  for (let i = 0; i < 240 && acted().length < SERVICES.length; i++) await new Promise((r) => setTimeout(r, 250));
  await new Promise((r) => setTimeout(r, 3000));
  t.deepEqual([...acted()].sort(), [...SERVICES].sort(), `each fix once after the resume (${one.output()}${two.output()})`);
  const reproposed = (await call(one, 'GET', '/v1/ledger?type=decision.reproposed&limit=100')).body.events as any[];
  t.is(reproposed.length, SERVICES.length, 'each path proposed again once, by one host');
  t.is(new Set(reproposed.map((e) => e.trace)).size, SERVICES.length);
  t.true((await call(two, 'GET', '/v1/ledger/verify')).body.ok);
});

testNeeding(
  missing,
  "a host killed during an action's connector call: the other takes the path over within 30 s, escalates that it may have run, and never calls again",
  async (t) => {
    t.timeout(120_000);
    const { hosts, acted } = await twoHosts(t);
    t.is(
      (
        await call(hosts[0]!, 'POST', '/v1/alerts/generic', {
          token: INGEST_TOKEN,
          body: { name: 'WorkerStuck', service: HANGS, severity: 'critical', id: HANGS },
        })
      ).status,
      202,
    );
    const calledBy = () => acted().filter((l) => l.startsWith(`called ${HANGS} by `));
    for (let i = 0; i < 600 && calledBy().length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    t.is(calledBy().length, 1, hosts.map((h) => h.output()).join(''));
    const pid = Number(calledBy()[0]!.split(' ').at(-1));
    const victim = hosts.find((h) => h.pid === pid);
    const survivor = hosts.find((h) => h.pid !== pid)!;
    t.truthy(victim, `the call was made by a host of the test (pid ${pid})`);
    // The record that the call may have been made is written before the call: it is there now.
    const started = (await call(survivor, 'GET', '/v1/ledger?type=action.started&limit=10')).body.events as any[];
    t.is(started.length, 1);
    process.kill(pid, 'SIGKILL');
    const killedAt = Date.now();

    const mayHaveRun = async () =>
      ((await call(survivor, 'GET', '/v1/ledger?type=outcome.escalated&limit=100')).body.events as any[]).filter((e) => /it may have run/.test(e.reason ?? ''));
    for (let i = 0; i < 600 && (await mayHaveRun()).length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    const took = Date.now() - killedAt;
    const escalated = await mayHaveRun();
    t.is(escalated.length, 1, survivor.output());
    t.is(escalated[0].trace, started[0].trace, 'the same episode');
    // The path's lease is 15 s; the surviving host's passes find it expired and take the path over.
    t.true(took <= 30_000, `taken over ${took} ms after the kill`);

    // Never called again, by either host, and no result is made up for it.
    await new Promise((r) => setTimeout(r, 3000));
    t.is(calledBy().length, 1, 'the action is not repeated');
    for (const type of ['action.executed', 'action.failed'])
      t.deepEqual((await call(survivor, 'GET', `/v1/ledger?type=${type}&limit=10`)).body.events, [], `no ${type}`);
    t.true((await call(survivor, 'GET', '/v1/ledger/verify')).body.ok);
  },
);
