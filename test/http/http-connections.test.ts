// Issue 22, item 8: idle slow-header connections cannot take the service's descriptors. A real
// host process with few descriptors (ulimit -n 512) on SQLite: a thousand connections that never
// finish their headers, from one address and then from twenty, and /health, a password sign-in
// and the doctor (which opens files) still answer. Every attack is bounded and stops by itself.
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test, { type ExecutionContext } from 'ava';
import restify from 'restify';
import { connectionCap, DEFAULT_LIMITS, guardConnections } from '../../host/http/connections.ts';
import { silentLogger } from '../../host/log.ts';
import { signLicence, testVendor } from '../helpers/app.ts';
import { hostNeeds } from '../helpers/sign-in-queue.ts';
import { slowHeaders } from '../helpers/slow-headers.ts';
import { listeningPort } from '../helpers/listening.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ADMIN = 'admin-token-for-http-connections-0123456789';

/** `node host/main.ts` on SQLite under `ulimit -n nofile`; stopped and removed after the test. */
async function limitedHost(
  t: ExecutionContext,
  nofile: number,
  env: Record<string, string> = {},
): Promise<{ base: string; port: number; output: () => string }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-conn-'));
  const childEnv: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SERVICE_') && !k.startsWith('TEST_')) childEnv[k] = v;
  Object.assign(childEnv, {
    SERVICE_PORT: '0',
    SERVICE_HOST: '0.0.0.0',
    SERVICE_DATA_DIR: dir,
    SERVICE_ADMIN_TOKEN: ADMIN,
    SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
    SERVICE_LOG_LEVEL: 'warn',
    ...env,
  });
  const child: ChildProcess = spawn('sh', ['-c', `ulimit -n ${nofile} && exec "$0" host/main.ts`, process.execPath], {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (c: Buffer) => (out = (out + c.toString('utf8')).slice(-20_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGKILL');
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const port = listeningPort(out);
    if (port !== null) return { base: `http://127.0.0.1:${port}`, port, output: () => out };
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the host did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const call = (base: string, method: string, p: string, body?: unknown, token: string | null = ADMIN) =>
  fetch(base + p, {
    method,
    headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });

test('the cap keeps a reserve of descriptors: an eighth of them, at least 256', (t) => {
  t.deepEqual(connectionCap(4096, 20_000), { max: 4096, reserve: 2500 });
  t.deepEqual(connectionCap(4096, 1024), { max: 768, reserve: 256 });
  t.deepEqual(connectionCap(4096, 512), { max: 256, reserve: 256 });
  t.deepEqual(connectionCap(4096, null), { max: 4096, reserve: null });
});

test('a thousand idle slow-header connections from one address and then from twenty: /health, sign-in and the doctor still answer', async (t) => {
  t.timeout(120_000);
  const host = await limitedHost(t, 512, { SERVICE_MAX_CONNECTIONS_PER_CLIENT: '64' });
  t.is((await call(host.base, 'POST', '/v1/licence', { licence: signLicence() })).status, 200);
  t.is((await call(host.base, 'POST', '/v1/auth/bootstrap', { email: 'owner@bank.example', name: 'First Owner' })).status, 201);
  const password = await hostNeeds.password(host.base, ADMIN);

  for (const from of [['127.0.0.2'], Array.from({ length: 20 }, (_, i) => `127.0.1.${i + 1}`)]) {
    const attack = await slowHeaders(host.port, from, 1000);
    try {
      const health = await call(host.base, 'GET', '/health', undefined, null);
      t.is(health.status, 200);
      const signIn = await call(host.base, 'POST', '/v1/auth/password', { email: hostNeeds.EMAIL, password }, null);
      t.is(signIn.status, 200, `sign-in under ${from.length} address(es)`);
      const doctor = await call(host.base, 'GET', '/v1/doctor?fresh=1');
      t.is(doctor.status, 200);
      t.false((await doctor.text()).includes('EMFILE'));
      // Within its cap (256 with 512 descriptors) the service closed the oldest idle ones.
      for (let i = 0; i < 100 && attack.closed() < 1000 - 256; i++) await new Promise((r) => setTimeout(r, 50));
      t.true(attack.closed() >= 1000 - 256, `the service closed ${attack.closed()} of the idle connections`);
    } finally {
      attack.stop();
    }
  }
  t.false(host.output().includes('EMFILE'), host.output().slice(-2000));
});

test('the server waits far less than Node does by default: 10 s for headers, 30 s for a request, 5 s idle keep-alive, 120 s on a silent connection', async (t) => {
  const { startApp } = await import('../helpers/app.ts');
  const ta = await startApp(t);
  const s = ta.app.server.server as import('node:http').Server & { connectionsCheckingInterval: number };
  t.like(s, { headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 5_000, timeout: 120_000, connectionsCheckingInterval: 1000 });
});

test('a request sent with "Expect: 100-continue" keeps its connection busy: a newer connection over the peer’s share is the one given up', async (t) => {
  // restify answers the Expect itself ('checkContinue', not 'request'): such a request must
  // count as one being answered, or its connection would be closed as idle under it.
  const server = restify.createServer();
  server.post('/slow', (req, res, next) => {
    req.resume();
    req.once('end', () => {
      res.send(200, { ok: true });
      next();
    });
  });
  guardConnections(server.server, { ...DEFAULT_LIMITS, max: 100, perClient: 1 }, () => false, silentLogger());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address();

  const body = JSON.stringify({ a: 1 });
  const slow = request({
    host: '127.0.0.1',
    port,
    path: '/slow',
    method: 'POST',
    headers: { 'content-length': Buffer.byteLength(body), expect: '100-continue' },
  });
  const answered = new Promise<number>((resolve, reject) => {
    slow.once('response', (res) => (res.resume(), resolve(res.statusCode ?? 0)));
    slow.once('error', reject);
  });
  await new Promise<void>((resolve) => (slow.once('continue', () => resolve()), slow.flushHeaders()));

  // A second connection from the same address: over its share of one, and the first is busy.
  const firstClosed = new Promise<string>((resolve) => slow.socket!.once('close', () => resolve('the busy one')));
  const second = connect(port, '127.0.0.1');
  t.teardown(() => second.destroy());
  const secondClosed = new Promise<string>((resolve) => second.once('close', () => resolve('the newer one')));
  t.is(await Promise.race([firstClosed, secondClosed]), 'the newer one');
  slow.end(body);
  t.is(await answered, 200, 'the request in flight was answered on its connection');
});
