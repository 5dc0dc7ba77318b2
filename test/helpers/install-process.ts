import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';
import knex, { type Knex } from 'knex';
import { ADMIN_TOKEN, signLicence, testVendor } from './app.ts';
import { MARIADB_URL, withServer } from './db.ts';
import { listeningPort } from './listening.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BOOT_DEADLINE_MS = 180_000;

/**
 * One install as a real host process (test/helpers/clocked-host.ts) on a loopback port, with a
 * data directory of its own and its own database (the SQLite file there, or a MariaDB database of
 * its own); its clock is set and its tick run by the test over IPC. Stopped, its data stays, and
 * `start` brings it back on the same port.
 */
export interface InstallProcess {
  name: string;
  base: string;
  dataDir: string;
  databaseUrl: string | null;
  /** Everything the process wrote, across its starts. */
  output(): string;
  /** Every answer body the test read from it, as text. */
  answers: string[];
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  setClock(at: Date): Promise<void>;
  tick(): Promise<void>;
  stop(): Promise<void>;
  start(at: Date): Promise<void>;
  /** A Knex handle on its database (for reading every column), closed after the test. */
  db(): Knex;
}

export async function startInstallProcess(t: ExecutionContext, name: string, opts: { mariadb: boolean; at: Date }): Promise<InstallProcess> {
  const dataDir = mkdtempSync(path.join(tmpdir(), `oncall-${name}-`));
  let databaseUrl: string | null = null;
  if (opts.mariadb) {
    const db = `t_${randomBytes(6).toString('hex')}`;
    await withServer(MARIADB_URL, (s) => s.raw(`create database \`${db}\` character set utf8mb4 collate utf8mb4_bin`));
    const url = new URL(MARIADB_URL);
    url.pathname = `/${db}`;
    databaseUrl = url.toString();
    t.teardown(() => withServer(MARIADB_URL, (s) => s.raw(`drop database if exists \`${db}\``)));
  }
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  let child: ChildProcess | null = null;
  let out = '';
  let port = 0;
  let next = 1;
  const waiting = new Map<number, (m: { ok: boolean; error?: string }) => void>();
  let handle: Knex | null = null;

  const send = (msg: Record<string, unknown>): Promise<void> =>
    new Promise((resolve, reject) => {
      if (child === null) return reject(new Error(`${name} is stopped`));
      const id = next++;
      waiting.set(id, (m) => (m.ok ? resolve() : reject(new Error(m.error))));
      child.send({ ...msg, id });
    });

  const stop = async (): Promise<void> => {
    const c = child;
    if (c === null) return;
    child = null;
    if (c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill('SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), 10_000);
    await gone;
    clearTimeout(timer);
  };
  t.teardown(async () => {
    await stop();
    await handle?.destroy();
  });

  const start = async (at: Date): Promise<void> => {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SERVICE_') && !k.startsWith('TEST_')) env[k] = v;
    Object.assign(env, {
      SERVICE_PORT: String(port),
      SERVICE_HOST: '127.0.0.1',
      SERVICE_DATA_DIR: dataDir,
      SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
      SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
      SERVICE_LOG_LEVEL: 'debug',
      TEST_CLOCK_AT: at.toISOString(),
      ...(databaseUrl === null ? {} : { SERVICE_DATABASE_URL: databaseUrl }),
    });
    const c = spawn(process.execPath, ['test/helpers/clocked-host.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    child = c;
    const keep = (chunk: Buffer) => (out += chunk.toString('utf8'));
    c.stdout!.on('data', keep);
    c.stderr!.on('data', keep);
    c.on('message', (m: { id: number; ok: boolean; error?: string }) => {
      waiting.get(m.id)?.(m);
      waiting.delete(m.id);
    });
    const orphanGuard = () => c.kill('SIGKILL');
    process.once('exit', orphanGuard);
    c.once('exit', () => process.off('exit', orphanGuard));
    const from = out.length;
    const deadline = Date.now() + BOOT_DEADLINE_MS;
    while (Date.now() < deadline) {
      if (c.exitCode !== null) throw new Error(`${name} exited while starting:\n${out.slice(-4000)}`);
      const listening = listeningPort(out.slice(from));
      if (listening !== null) {
        port = listening;
        return;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${name} did not start within ${BOOT_DEADLINE_MS / 1000} s:\n${out.slice(-4000)}`);
  };

  await start(opts.at);
  const answers: string[] = [];
  const install: InstallProcess = {
    name,
    get base() {
      return `http://127.0.0.1:${port}`;
    },
    dataDir,
    databaseUrl,
    output: () => out,
    answers,
    call: async (method, p, body) => {
      const res = await fetch(`http://127.0.0.1:${port}${p}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      answers.push(text);
      return { status: res.status, body: text === '' ? null : JSON.parse(text) };
    },
    setClock: (at) => send({ op: 'set', at: at.toISOString() }),
    tick: () => send({ op: 'tick' }),
    stop,
    start,
    db: () =>
      (handle ??=
        databaseUrl === null
          ? knex({ client: 'better-sqlite3', connection: { filename: path.join(dataDir, 'service.db') }, useNullAsDefault: true })
          : knex({ client: 'mysql2', connection: databaseUrl, pool: { min: 0, max: 1 } })),
  };
  const lic = await install.call('POST', '/v1/licence', { licence: signLicence() });
  if (lic.status !== 200) throw new Error(`${name}: licence install failed: ${JSON.stringify(lic.body)}`);
  const boot = await install.call('POST', '/v1/auth/bootstrap', { email: 'owner@bank.example', name: 'First Owner' });
  if (boot.status !== 201) throw new Error(`${name}: bootstrap failed: ${JSON.stringify(boot.body)}`);
  return install;
}

/** Every value of every column of every table of an install's database, as text. */
export async function allColumns(db: Knex): Promise<string> {
  const mysql = db.client.config.client === 'mysql2';
  const tables: string[] = mysql
    ? ((await db.raw('show tables'))[0] as Array<Record<string, string>>).map((r) => Object.values(r)[0]!)
    : ((await db.raw("select name from sqlite_master where type = 'table'")) as Array<{ name: string }>).map((r) => r.name);
  const out: string[] = [];
  for (const table of tables) for (const r of (await db(table).select('*')) as unknown[]) out.push(JSON.stringify(r));
  return out.join('\n');
}
