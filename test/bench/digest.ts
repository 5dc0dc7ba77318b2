/**
 * `npm run bench:digest`: whether a viewer's digests stall the service (issue 22, item 10). On
 * the real service (`node host/main.ts`) over loopback, SQLite and (when SERVICE_DATABASE_URL
 * names a MySQL/MariaDB server) MySQL, per engine on a fresh store:
 *   0. brought to `operating` over the API; a viewer (viewer@bank.example) gets a session by
 *      password; then this process writes EVENTS ledger events onto the same store (1,000 per
 *      commit, action, autonomy and other types in turn, spread over 60 days);
 *   1. twelve GET /v1/digest?days=90 by the viewer at once, while /health is asked every 20 ms
 *      (one at a time) until the last digest answered: /health's worst and median time.
 * Target: /health's worst under 250 ms while the digests run (it was 1.9 s on SQLite with
 * 300,000 events before the window was read in chunks and concurrent builds were shared).
 *
 * Flags (or env): --events N (BENCH_EVENTS, 300000), --only sqlite|mysql (BENCH_ONLY).
 */
import { randomBytes } from 'node:crypto';
import { createApp } from '../../host/app.ts';
import { TestClock } from '../../host/clock.ts';
import { loadConfig } from '../../host/config.ts';
import { createLogger } from '../../host/log.ts';
import { count, type Check, enginesToRun, heading, machine, median, printReport, round1, runBenchmark, table, type Engine, type Store } from './common.ts';
import { call, expect, makeOperating, withService } from './service.ts';

const ADMIN_TOKEN = `bench-admin-${randomBytes(16).toString('hex')}`;
const SECRET_KEY = 'digest-benchmark-secret-key-0123456789abcdef';
const VIEWER = 'viewer@bank.example';
const TARGET_HEALTH_MAX_MS = 250;
const TYPES = ['action.executed', 'governance.autonomy_changed', 'signal.pushed', 'check.finished', 'retrieval.context', 'governance.halted'];

/** Writes `n` events onto the store the service runs on, from this process, spread over the last 60 days. */
async function seed(store: Store, n: number): Promise<void> {
  const env = {
    SERVICE_DATA_DIR: store.dataDir,
    SERVICE_DATABASE_URL: store.databaseUrl ?? undefined,
    SERVICE_SECRET_KEY: SECRET_KEY,
    SERVICE_LOG_LEVEL: 'error',
  };
  const config = loadConfig(env);
  const clock = new TestClock(new Date(Date.now() - 60 * 86_400_000).toISOString());
  const app = await createApp(config, { clock, log: createLogger(config), manualTick: true });
  const step = Math.floor((60 * 86_400_000) / Math.ceil(n / 1000)) - 1;
  try {
    for (let i = 0; i < n; i += 1000) {
      clock.advance(step);
      await app.ledger.transact(async (_trx, record) => {
        await record(
          Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({
            type: TYPES[(i + j) % TYPES.length]!,
            actor: 'system',
            reason: 'benchmark',
            data: { service: `svc-${j % 50}`, from: 'shadow', to: 'off', n: i + j },
          })),
        );
      });
    }
  } finally {
    await app.close();
  }
}

interface Result {
  engine: Engine;
  events: number;
  digests: Array<{ status: number; ms: number }>;
  health: { n: number; max_ms: number; p50_ms: number };
}

async function benchEngine(engine: Engine, serverUrl: string | null, events: number): Promise<Result> {
  return withService(engine, serverUrl, 'digest', { adminToken: ADMIN_TOKEN, secretKey: SECRET_KEY, profile: false }, async ({ service, store, log }) => {
    await makeOperating(service.base, ADMIN_TOKEN);
    await expect('adding the viewer', 201, call(service.base, 'POST', '/v1/people', ADMIN_TOKEN, { email: VIEWER, name: 'Viewer', role: 'viewer' }));
    const { password } = await expect<{ password: string }>(
      'a password',
      201,
      call(service.base, 'POST', `/v1/people/${encodeURIComponent(VIEWER)}/password`, ADMIN_TOKEN, {}),
    );
    const { token } = await expect<{ token: string }>('sign-in', 200, call(service.base, 'POST', '/v1/auth/password', null, { email: VIEWER, password }));
    log(`writing ${events.toLocaleString('en')} ledger events…`);
    await seed(store, events);
    log('12 digests of 90 days at once, /health every 20 ms…');
    const t0 = performance.now();
    let done = false;
    const digests = Promise.all(
      Array.from({ length: 12 }, () =>
        call(service.base, 'GET', '/v1/digest?days=90', token).then((r) => ({ status: r.status, ms: round1(performance.now() - t0) })),
      ),
    ).finally(() => (done = true));
    const times: number[] = [];
    while (!done) {
      const h0 = performance.now();
      await fetch(`${service.base}/health`);
      times.push(performance.now() - h0);
      await new Promise((r) => setTimeout(r, 20));
    }
    return { engine, events, digests: await digests, health: { n: times.length, max_ms: round1(Math.max(...times)), p50_ms: round1(median(times)) } };
  });
}

async function main(): Promise<void> {
  const events = count('events', 'BENCH_EVENTS', 300_000);
  const { engines, serverUrl, mysqlSkipped } = enginesToRun();
  const started = new Date();
  const results: Result[] = [];
  for (const engine of engines) results.push(await benchEngine(engine, serverUrl, events));
  const checks: Check[] = results.map((r) => ({
    engine: r.engine,
    what: '/health worst time during 12 digests of 90 days, ms',
    value: r.health.max_ms,
    target: `< ${TARGET_HEALTH_MAX_MS}`,
    pass: r.health.max_ms < TARGET_HEALTH_MAX_MS && r.digests.every((d) => d.status === 200),
  }));
  const rows = [['engine', 'ledger events', 'digests (status: ms)', '/health asks', '/health p50 ms', '/health max ms', 'target', 'result']];
  for (const [i, r] of results.entries())
    rows.push([
      r.engine,
      r.events.toLocaleString('en'),
      `${r.digests.filter((d) => d.status === 200).length}×200, last ${Math.max(...r.digests.map((d) => d.ms))} ms`,
      String(r.health.n),
      String(r.health.p50_ms),
      String(r.health.max_ms),
      checks[i]!.target,
      checks[i]!.pass ? 'PASS' : 'MISS',
    ]);
  printReport(['', heading('Digest', started), '', table(rows), ''], checks, mysqlSkipped, {
    ...machine('digest', started),
    results,
    checks,
    all_pass: checks.every((c) => c.pass),
  });
}

await runBenchmark('digest', main);
