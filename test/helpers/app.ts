import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import type { ExecutionContext } from 'ava';
import { createApp, type App, type AppOptions } from '../../host/app.ts';
import { TestClock } from '../../host/clock.ts';
import { loadConfig } from '../../host/config.ts';
import { signedMessage, type Licence } from '../../host/licence/licence.ts';
import { createLogger, type Logger } from '../../host/log.ts';
import { createTestStore, type TestStore } from './db.ts';

export const ADMIN_TOKEN = 'admin-token-for-tests-0123456789abcdef';
export const INGEST_TOKEN = 'ingest-token-for-tests-0123456789abcdef';

/** A vendor key pair the tests sign licences with; its public half is given as SERVICE_LICENCE_PUBKEY. */
export const testVendor: { privateKey: KeyObject; publicKeyPem: string } = (() => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
})();

export function signLicence(fields: Partial<Omit<Licence, 'signature'>> = {}, key: KeyObject = testVendor.privateKey): Licence {
  const unsigned: Omit<Licence, 'signature'> = {
    customer: 'Test Bank',
    tier: 'enterprise',
    services: 250,
    installs: 10,
    features: ['keychain'],
    issued_at: '2026-01-01T00:00:00.000Z',
    expires_at: '2027-01-01T00:00:00.000Z',
    grace_days: 14,
    ...fields,
  };
  return { ...unsigned, signature: sign(null, Buffer.from(signedMessage(unsigned), 'utf8'), key).toString('base64') };
}

export interface TestApp {
  app: App;
  clock: TestClock;
  store: TestStore;
  base: string;
  /** The SERVICE_* variables the app was started with (see serviceEnv). */
  env: Record<string, string | undefined>;
  /** Every log line the app wrote, raw. */
  logs: string[];
  /** fetch against the app; `token` goes in as a bearer, `body` as JSON (a string as is). */
  call(method: string, path: string, opts?: { token?: string | null; body?: unknown }): Promise<{ status: number; body: any; headers: Headers }>;
}

export interface StartOptions {
  /** No real-time tick every 10 s: the test calls `app.tick()` when its clock has moved (a seeded history stays as seeded). */
  manualTick?: boolean;
  env?: Record<string, string | undefined>;
  clock?: TestClock;
  store?: TestStore;
  /** Keep the store after the test (for restarts); the caller cleans it up. */
  keepStore?: boolean;
  /** Shorter investigation cut-offs (per check, per investigation). */
  investigationLimits?: AppOptions['investigationLimits'];
  /** The study's waits (pauses, pacing, standing aside): a test advances its clock instead of sleeping. */
  studyWait?: AppOptions['studyWait'];
  /** Listen on this port (a restart that must keep its address); 0, a free one, by default. */
  port?: number;
}

/**
 * The SERVICE_* variables a test's service runs with on `store`, `overrides` last (undefined
 * removes one). Child processes (the CLI) get the same, so they open the same install.
 */
export function serviceEnv(store: TestStore, overrides: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return {
    SERVICE_DATA_DIR: store.dataDir,
    SERVICE_DATABASE_URL: store.databaseUrl ?? undefined,
    SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
    SERVICE_INGEST_TOKEN: INGEST_TOKEN,
    SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
    SERVICE_LOG_LEVEL: 'info',
    ...overrides,
  };
}

/** Starts the whole service on a fresh database and a loopback port; torn down after the test. */
export async function startApp(t: ExecutionContext, opts: StartOptions = {}): Promise<TestApp> {
  const store = opts.store ?? (await createTestStore({ migrated: true }));
  const clock = opts.clock ?? new TestClock('2026-06-01T00:00:00.000Z');
  const env = serviceEnv(store, opts.env);
  const logs: string[] = [];
  const log: Logger = createLogger(loadConfig(env), { write: (line: string) => (logs.push(line), true) } as unknown as NodeJS.WritableStream);
  const app = await createApp(loadConfig(env), {
    clock,
    log,
    ...(opts.investigationLimits === undefined ? {} : { investigationLimits: opts.investigationLimits }),
    ...(opts.studyWait === undefined ? {} : { studyWait: opts.studyWait }),
    manualTick: opts.manualTick === true,
  });
  const port = await app.listen(opts.port ?? 0, '127.0.0.1');
  t.teardown(async () => {
    await app.close();
    if (opts.store === undefined && !opts.keepStore) await store.cleanup();
  });
  const base = `http://127.0.0.1:${port}`;
  return {
    app,
    clock,
    store,
    base,
    env,
    logs,
    call: async (method, path, o = {}) => {
      const headers: Record<string, string> = {};
      const token = o.token === undefined ? ADMIN_TOKEN : o.token;
      if (token !== null) headers.authorization = `Bearer ${token}`;
      let body: string | undefined;
      if (o.body !== undefined) {
        headers['content-type'] = 'application/json';
        body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
      }
      const res = await fetch(base + path, { method, headers, body });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text === '' ? null : JSON.parse(text);
      } catch {
        /* not JSON: keep the text */
      }
      return { status: res.status, body: parsed, headers: res.headers };
    },
  };
}

/** Brings a started app to `operating`: a licence, then the first owner. */
export async function makeOperating(ta: TestApp, owner = 'owner@bank.example'): Promise<void> {
  const lic = await ta.call('POST', '/v1/licence', { body: { licence: signLicence() } });
  if (lic.status !== 200) throw new Error(`licence install failed: ${JSON.stringify(lic.body)}`);
  const boot = await ta.call('POST', '/v1/auth/bootstrap', { body: { email: owner, name: 'First Owner' } });
  if (boot.status !== 201) throw new Error(`bootstrap failed: ${JSON.stringify(boot.body)}`);
}
