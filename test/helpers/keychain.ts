import type { ExecutionContext } from 'ava';
import { createApp, type App } from '../../host/app.ts';
import type { TestClock } from '../../host/clock.ts';
import { loadConfig } from '../../host/config.ts';
import type { Licence } from '../../host/licence/licence.ts';
import { createLogger, type Logger } from '../../host/log.ts';
import { ADMIN_TOKEN, serviceEnv, signLicence } from './app.ts';
import { createTestStore, type TestStore } from './db.ts';
import { allColumns } from './install-process.ts';

/** One install of a keychain test: its own data directory and database, the test's shared clock. */
export interface Install {
  name: string;
  app: App;
  store: TestStore;
  base: string;
  port: number;
  /** Every log line the install wrote. */
  logs: string[];
  /** Every answer body the test read from it, as text (searched for secrets). */
  answers: string[];
  call(method: string, path: string, body?: unknown, token?: string | null): Promise<{ status: number; body: any }>;
  /** Stops the install (its data stays); `restart` starts it again on the same port. */
  stop(): Promise<void>;
  restart(): Promise<Install>;
  running(): boolean;
}

export interface InstallOptions {
  clock: TestClock;
  licence?: Partial<Omit<Licence, 'signature'>>;
  env?: Record<string, string | undefined>;
}

/**
 * Starts an install on its own store (SQLite, or a MariaDB database of its own under
 * TEST_DATABASE_URL) on a loopback port, brings it to `operating` with an Enterprise licence
 * (or `licence`) and a first owner, and tears it down after the test.
 */
export async function startInstall(t: ExecutionContext, name: string, opts: InstallOptions): Promise<Install> {
  const store = await createTestStore();
  t.teardown(() => store.cleanup());
  const install = await launch(t, name, store, opts, 0);
  const lic = await install.call('POST', '/v1/licence', { licence: signLicence(opts.licence ?? {}) });
  if (lic.status !== 200) throw new Error(`licence install failed: ${JSON.stringify(lic.body)}`);
  const boot = await install.call('POST', '/v1/auth/bootstrap', { email: 'owner@bank.example', name: 'First Owner' });
  if (boot.status !== 201) throw new Error(`bootstrap failed: ${JSON.stringify(boot.body)}`);
  return install;
}

async function launch(t: ExecutionContext, name: string, store: TestStore, opts: InstallOptions, port: number): Promise<Install> {
  const env = serviceEnv(store, { SERVICE_LOG_LEVEL: 'debug', ...opts.env });
  const logs: string[] = [];
  const log: Logger = createLogger(loadConfig(env), { write: (line: string) => (logs.push(line), true) } as unknown as NodeJS.WritableStream);
  const app = await createApp(loadConfig(env), { clock: opts.clock, log, manualTick: true });
  const bound = await app.listen(port, '127.0.0.1');
  let closed: Promise<void> | null = null;
  const stop = () => (closed ??= app.close());
  t.teardown(stop);
  const base = `http://127.0.0.1:${bound}`;
  const answers: string[] = [];
  const install: Install = {
    name,
    app,
    store,
    base,
    port: bound,
    logs,
    answers,
    call: async (method, path, body, token = ADMIN_TOKEN) => {
      const headers: Record<string, string> = {};
      if (token !== null) headers.authorization = `Bearer ${token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      answers.push(text);
      return { status: res.status, body: text === '' ? null : JSON.parse(text) };
    },
    stop,
    restart: async () => {
      await stop();
      const again = await launch(t, name, store, opts, bound);
      again.logs.unshift(...logs);
      again.answers.unshift(...answers);
      return again;
    },
    running: () => closed === null,
  };
  return install;
}

/** Makes `home` the home and pairs each of `members` with it by a site key of its own. */
export async function pair(t: ExecutionContext, home: Install, ...members: Install[]): Promise<void> {
  if ((await home.call('GET', '/v1/keychain')).body.role !== 'home') {
    const made = await home.call('POST', '/v1/keychain/home', { name: home.name, address: home.base });
    t.is(made.status, 200, JSON.stringify(made.body));
  }
  for (const m of members) {
    const key = await home.call('POST', '/v1/keychain/site-keys');
    t.is(key.status, 201, JSON.stringify(key.body));
    const joined = await m.call('POST', '/v1/keychain/join', { home: home.base, site_key: key.body.site_key, name: m.name, address: m.base });
    t.is(joined.status, 200, JSON.stringify(joined.body));
  }
}

/** The events of a type on an install, oldest first. */
export async function events(i: Install, type: string): Promise<Array<{ type: string; actor: string; reason: string; data: any }>> {
  const r = await i.call('GET', `/v1/ledger?type=${encodeURIComponent(type)}&order=asc&limit=2000`);
  return r.body.events;
}

/** Every value of every column of every table of the install's database, as text. */
export function everyColumn(i: Install): Promise<string> {
  return allColumns(i.app.db);
}

export { ADMIN_TOKEN };
