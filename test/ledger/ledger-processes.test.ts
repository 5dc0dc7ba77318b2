import type { ExecutionContext } from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MARIADB_URL, mariadbTest, withServer } from '../helpers/db.ts';
import { listeningPort } from '../helpers/listening.ts';

/**
 * Two real host processes on one MySQL database, started at the same moment (so their
 * migrations and install creation race) and then appended to at once: the chain they leave
 * must verify and hand out every seq exactly once. Always runs on MariaDB, even in the SQLite
 * pass, since SQLite has no second process to race with.
 */
const SERVER_URL = MARIADB_URL;
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ADMIN_TOKEN = 'admin-token-for-processes-0123456789abcdef';
const INGEST_TOKEN = 'ingest-token-for-processes-0123456789abcdef';
const SECRET_KEY = 'secret-key-shared-by-both-hosts-0123456789';
const PROCESSES = 2;
const CLIENTS = 8;
const EVENTS_PER_CLIENT = 100;
const BOOT_DEADLINE_MS = 30_000;
const TITLE = 'two host processes sharing one MySQL database appending at once leave a chain that verifies';

interface Host {
  name: string;
  base: string;
  child: ChildProcess;
  /** The last part of what the process wrote, for the failure message. */
  output(): string;
  exited: { code: number | null; signal: NodeJS.Signals | null } | null;
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
    SERVICE_LOG_LEVEL: 'warn',
  });
  const child = spawn(process.execPath, ['host/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (chunk: Buffer) => {
    out = (out + chunk.toString('utf8')).slice(-8000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const host: Host = { name, base: `http://127.0.0.1:${port}`, child, output: () => out, exited: null };
  // Should this worker end without its teardown (ava timing the file out), take the host along.
  const orphanGuard = () => child.kill('SIGKILL');
  process.once('exit', orphanGuard);
  child.once('exit', (code, signal) => {
    host.exited = { code, signal };
    process.off('exit', orphanGuard);
  });
  return host;
}

async function stopHost(host: Host): Promise<void> {
  if (host.exited !== null || host.child.exitCode !== null || host.child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => host.child.once('exit', () => resolve()));
  host.child.kill('SIGTERM');
  const timer = setTimeout(() => host.child.kill('SIGKILL'), 5000);
  await gone;
  clearTimeout(timer);
}

async function waitForHealth(t: ExecutionContext, host: Host): Promise<void> {
  const deadline = Date.now() + BOOT_DEADLINE_MS;
  while (Date.now() < deadline) {
    if (host.exited !== null) {
      throw new Error(`${host.name} exited while starting (code ${host.exited.code}, signal ${host.exited.signal}):\n${host.output()}`);
    }
    const listening = listeningPort(host.output());
    if (listening === null) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      continue;
    }
    host.base = `http://127.0.0.1:${listening}`;
    try {
      const res = await fetch(`${host.base}/health`, { signal: AbortSignal.timeout(2000) });
      if (res.status === 200) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.log(host.output());
  throw new Error(`${host.name} did not answer /health within ${BOOT_DEADLINE_MS / 1000} s`);
}

async function call(host: Host, method: string, route: string, token: string, body?: unknown): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(host.base + route, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* keep the text */
  }
  return { status: res.status, body: parsed };
}

await mariadbTest(TITLE, async (t) => {
  t.timeout(110_000);
  const name = `t_${randomBytes(6).toString('hex')}`;
  await withServer(SERVER_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`));
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  const dirs = Array.from({ length: PROCESSES }, () => mkdtempSync(path.join(tmpdir(), 'oncall-proc-')));
  const hosts: Host[] = [];
  t.teardown(async () => {
    await Promise.all(hosts.map(stopHost));
    await withServer(SERVER_URL, (db) => db.raw(`drop database if exists \`${name}\``));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  // Both start at the same moment on an empty database: migrations and install row race.
  // Port 0: each host chooses its own and prints it (a port picked here could be taken meanwhile).
  const ports = [0, 0];
  for (let i = 0; i < PROCESSES; i++) hosts.push(startHost(`host ${i + 1}`, ports[i]!, dirs[i]!, url.toString()));
  await Promise.all(hosts.map((h) => waitForHealth(t, h)));
  for (const h of hosts) t.is(h.exited, null, `${h.name} is still running after the simultaneous start`);

  const statuses = await Promise.all(hosts.map((h) => call(h, 'GET', '/v1/status', ADMIN_TOKEN)));
  t.is(statuses[0]!.body.fingerprint, statuses[1]!.body.fingerprint, 'both processes are the same install');
  // Whatever the hosts record about themselves at start (none on a clean tree) comes first.
  const base = Math.max(...statuses.map((s) => Number(s.body.ledger_head?.seq ?? 0)));

  // Every client of every process appends its events one after another, all at once.
  const total = PROCESSES * CLIENTS * EVENTS_PER_CLIENT;
  const answers = await Promise.all(
    hosts.flatMap((h) =>
      Array.from({ length: CLIENTS }, async (_, c) => {
        const got: Array<{ status: number; body: any }> = [];
        for (let n = 0; n < EVENTS_PER_CLIENT; n++) {
          got.push(
            await call(h, 'POST', '/v1/events', INGEST_TOKEN, {
              type: 'human.test',
              actor: `${h.name} client ${c}`,
              reason: `event ${n}`,
              data: { process: h.name, client: c, n },
            }),
          );
        }
        return got;
      }),
    ),
  ).then((per) => per.flat());

  const refused = answers.filter((a) => a.status !== 201);
  t.is(refused.length, 0, `every append answers 201; first refusal: ${JSON.stringify(refused[0])}`);
  const seqs = answers.map((a) => a.body?.seq as number).sort((a, b) => a - b);
  t.is(new Set(seqs).size, total, 'each seq is handed out once');
  t.deepEqual(
    seqs,
    Array.from({ length: total }, (_, i) => base + i + 1),
    'the seqs are exactly 1..N (after what the hosts recorded at start)',
  );
  t.is(new Set(answers.map((a) => a.body?.hash)).size, total, 'each hash is distinct');

  for (const h of hosts) {
    const verify = await call(h, 'GET', '/v1/ledger/verify', ADMIN_TOKEN);
    t.is(verify.status, 200);
    t.like(verify.body, { ok: true, checked: base + total, first_bad_seq: null, head: { seq: base + total } }, `verify as seen by ${h.name}`);
  }
  for (const h of hosts) t.is(h.exited, null, `${h.name} is still running after the appends`);
});
