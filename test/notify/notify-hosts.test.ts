import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';
import { MARIADB_URL, mariadbTest, withServer } from '../helpers/db.ts';
import { listeningPort } from '../helpers/listening.ts';

/*
 * Two host processes (`node host/main.ts`) on one MariaDB database, both running the delivery
 * worker on their tick and on their nudges, and alerts pushed to both at once: every incident's
 * notification reaches the webhook exactly once.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ADMIN_TOKEN = 'admin-token-for-notify-hosts-0123456789abcdef';
const INGEST_TOKEN = 'ingest-token-for-notify-hosts-0123456789abcdef';
const SECRET_KEY = 'secret-key-shared-by-both-notify-hosts-01234';
const HOOK_SECRET = 'whsec-two-hosts-0123456789abcdef';
const SERVICES = 24;
/** Longer than one tick (10 s), so both hosts' workers have run after the last delivery. */
const SETTLE_MS = 12_000;

interface Host {
  name: string;
  base: string;
  child: ChildProcess;
  output(): string;
  exited: boolean;
}

function startHost(name: string, port: number, dataDir: string, databaseUrl: string): Host {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SERVICE_') && !k.startsWith('TEST_')) env[k] = v;
  Object.assign(env, {
    SERVICE_PORT: String(port),
    SERVICE_HOST: '127.0.0.1',
    SERVICE_DATA_DIR: dataDir,
    SERVICE_DATABASE_URL: databaseUrl,
    SERVICE_SECRET_KEY: SECRET_KEY,
    SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
    SERVICE_INGEST_TOKEN: INGEST_TOKEN,
    SERVICE_DEBOUNCE_S: '0',
    // Every one of the test's services the estate does not have opens its own incident (no storm).
    SERVICE_STORM_PER_SOURCE: '100',
    SERVICE_LICENCE_CHECK: 'offline',
    SERVICE_LOG_LEVEL: 'warn',
  });
  const child = spawn(process.execPath, ['host/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (chunk: Buffer) => (out = (out + chunk.toString('utf8')).slice(-8000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const host: Host = { name, base: `http://127.0.0.1:${port}`, child, output: () => out, exited: false };
  const orphanGuard = () => child.kill('SIGKILL');
  process.once('exit', orphanGuard);
  child.once('exit', () => {
    host.exited = true;
    process.off('exit', orphanGuard);
  });
  return host;
}

async function stopHost(host: Host): Promise<void> {
  if (host.exited) return;
  const gone = new Promise<void>((resolve) => host.child.once('exit', () => resolve()));
  host.child.kill('SIGTERM');
  const timer = setTimeout(() => host.child.kill('SIGKILL'), 5000);
  await gone;
  clearTimeout(timer);
}

async function waitForHealth(host: Host): Promise<void> {
  // A first start on MariaDB runs every migration: about half a minute on a loaded machine.
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (host.exited) throw new Error(`${host.name} exited while starting:\n${host.output()}`);
    const listening = listeningPort(host.output());
    if (listening === null) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      continue;
    }
    host.base = `http://127.0.0.1:${listening}`;
    if (
      await fetch(`${host.base}/health`, { signal: AbortSignal.timeout(2000) }).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${host.name} did not answer /health within 90 s:\n${host.output()}`);
}

async function call(host: Host, method: string, route: string, token: string, body?: unknown): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(host.base + route, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

async function receiver(t: ExecutionContext): Promise<{ url: string; got: Buffer[] }> {
  const got: Buffer[] = [];
  const srv = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST') got.push(Buffer.concat(chunks));
      res.statusCode = req.method === 'POST' ? 200 : 405;
      res.end();
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => (srv.closeAllConnections(), srv.close(() => resolve()))));
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hook`, got };
}

await mariadbTest('two host processes on one MariaDB database never deliver one notification twice', async (t) => {
  t.timeout(200_000);
  const name = `t_${randomBytes(6).toString('hex')}`;
  await withServer(MARIADB_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`));
  const url = new URL(MARIADB_URL);
  url.pathname = `/${name}`;
  const dirs = [mkdtempSync(path.join(tmpdir(), 'oncall-notify-a-')), mkdtempSync(path.join(tmpdir(), 'oncall-notify-b-'))];
  const hosts: Host[] = [];
  t.teardown(async () => {
    await Promise.all(hosts.map(stopHost));
    await withServer(MARIADB_URL, (db) => db.raw(`drop database if exists \`${name}\``));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const hook = await receiver(t);

  // Both start together on the empty database (the migrations are serialised by their lock).
  // Port 0: each host chooses its own and prints it (a port picked here could be taken meanwhile).
  const ports = [0, 0];
  hosts.push(startHost('host a', ports[0]!, dirs[0]!, url.toString()), startHost('host b', ports[1]!, dirs[1]!, url.toString()));
  await Promise.all(hosts.map(waitForHealth));
  const [a, b] = hosts as [Host, Host];

  t.is((await call(a, 'POST', '/v1/licence/redeem', ADMIN_TOKEN, { customer: 'Two Hosts Bank' })).status, 201);
  t.is((await call(a, 'POST', '/v1/auth/bootstrap', ADMIN_TOKEN, { email: 'owner@bank.example', name: 'Owner' })).status, 201);
  t.is((await call(a, 'PUT', '/v1/connectors/hook', ADMIN_TOKEN, { kind: 'webhook', settings: { url: hook.url, secret: HOOK_SECRET } })).status, 201);
  t.is((await call(b, 'PUT', '/v1/settings/notifications', ADMIN_TOKEN, { targets: ['hook'] })).status, 200);

  // Alerts of many services pushed to both hosts at once: both open episodes and both deliver.
  const fire = (i: number) => ({ name: 'Down', service: `svc-${i}`, severity: 'critical', status: 'firing', id: `svc-${i}-Down` });
  await Promise.all(Array.from({ length: SERVICES }, (_, i) => call(i % 2 === 0 ? a : b, 'POST', '/v1/alerts/generic', INGEST_TOKEN, { alerts: [fire(i)] })));

  const deadline = Date.now() + 60_000;
  // Each incident's opening, and its diagnosis once investigated (docs/investigation.md).
  const messages = () => hook.got.map((g) => JSON.parse(g.toString('utf8')) as { event: string; episode: { id: string } });
  const openings = () => messages().filter((m) => m.event === 'incident.opened');
  while (openings().length < SERVICES && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
  // Every episode escalated and told, and the messages received matching the outcome.notified
  // events on two reads in a row (a message received is recorded just after): a loaded machine
  // can take longer than a fixed wait. Then one tick more, so that a second delivery would show.
  const notifiedCount = async () => ((await call(a, 'GET', '/v1/ledger?type=outcome.notified&limit=500', ADMIN_TOKEN)).body.events as any[]).length;
  const allTold = async () =>
    ((await call(b, 'GET', '/v1/episodes?limit=100', ADMIN_TOKEN)).body.episodes as any[]).filter(
      (e) => e.outcome === 'escalated' && e.outcome_detail.told.length === 1,
    ).length === SERVICES;
  const settled = async () => (await allTold()) && (await notifiedCount()) === messages().length;
  const late = Date.now() + 90_000;
  for (let agreed = 0; agreed < 2 && Date.now() < late;) {
    agreed = (await settled()) ? agreed + 1 : 0;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const ids = openings().map((m) => m.episode.id);
  t.is(new Set(ids).size, SERVICES, `every incident told (${a.output()}${b.output()})`);
  t.is(ids.length, SERVICES, 'none told twice');
  const keys = messages().map((m) => `${m.episode.id} ${m.event}`);
  t.is(new Set(keys).size, keys.length, 'no message (opening or diagnosis) delivered twice');
  const notified = (await call(a, 'GET', '/v1/ledger?type=outcome.notified&limit=500', ADMIN_TOKEN)).body.events as any[];
  t.is(notified.length, messages().length, 'one outcome.notified per delivered message');
  const episodes = (await call(b, 'GET', '/v1/episodes?limit=100', ADMIN_TOKEN)).body.episodes as any[];
  t.is(episodes.length, SERVICES);
  t.true(episodes.every((e) => e.outcome === 'escalated' && e.outcome_detail.told.length === 1 && e.outcome_detail.told[0] === 'hook'));
  t.true((await call(a, 'GET', '/v1/ledger/verify', ADMIN_TOKEN)).body.ok);
});
