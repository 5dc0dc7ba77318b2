/**
 * `npm run bench:memory` (issue 24, "Leaner"): the service's idle memory. Target: RSS at most
 * 120 MB after start on SQLite.
 *
 * Per variant, the real service (`node host/main.ts`) on a fresh store, started as the
 * benchmarks start it (test/bench/service.ts), then left alone for --idle seconds (BENCH_IDLE,
 * 20); VmRSS and VmHWM are read from /proc/<pid>/status. Then it is made `operating` (a licence
 * and the first owner: its background passes run) and left alone again, and read again. The
 * variants: plain `node host/main.ts`, and the same with MALLOC_ARENA_MAX=2, as `npm start` and
 * the systemd unit run it (examples/systemd/oncall.service). SQLite, and MySQL when
 * SERVICE_DATABASE_URL names a server. Stores and processes are removed in every case.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { count, enginesToRun, heading, loadAverage, machine, printReport, procStatusMb, runBenchmark, table, type Check, type Engine } from './common.ts';
import { makeOperating, withService } from './service.ts';

const TARGET_MB = 120;
const ADMIN_TOKEN = `bench-admin-${randomBytes(16).toString('hex')}`;
const SECRET_KEY = 'memory-benchmark-secret-key-0123456789abcdef';

const VARIANTS: Array<{ name: string; env: Record<string, string> }> = [
  { name: 'node host/main.ts', env: {} },
  { name: 'MALLOC_ARENA_MAX=2 (npm start, systemd)', env: { MALLOC_ARENA_MAX: '2' } },
];

interface Figures {
  engine: Engine;
  variant: string;
  fresh_rss_mb: number | null;
  fresh_hwm_mb: number | null;
  operating_rss_mb: number | null;
  operating_hwm_mb: number | null;
  load_before: string;
}

await runBenchmark('memory', async () => {
  const started = new Date();
  const idleS = count('idle', 'BENCH_IDLE', 20);
  const { engines, serverUrl, mysqlSkipped } = enginesToRun();
  const results: Figures[] = [];
  for (const engine of engines) {
    for (const v of VARIANTS) {
      results.push(
        await withService(
          engine,
          serverUrl,
          'memory',
          { adminToken: ADMIN_TOKEN, secretKey: SECRET_KEY, profile: false, env: v.env },
          async ({ service, log, load_before }) => {
            const pid = service.child.pid!;
            log(`${v.name}: serving; idle ${idleS} s`);
            await sleep(idleS * 1000);
            const fresh_rss_mb = procStatusMb(pid, 'VmRSS');
            const fresh_hwm_mb = procStatusMb(pid, 'VmHWM');
            await makeOperating(service.base, ADMIN_TOKEN);
            log(`${v.name}: operating; idle ${idleS} s`);
            await sleep(idleS * 1000);
            return {
              engine,
              variant: v.name,
              fresh_rss_mb,
              fresh_hwm_mb,
              operating_rss_mb: procStatusMb(pid, 'VmRSS'),
              operating_hwm_mb: procStatusMb(pid, 'VmHWM'),
              load_before,
            };
          },
        ),
      );
    }
  }
  const show = (n: number | null) => (n === null ? '-' : n.toFixed(1));
  const checks: Check[] = results
    .filter((r) => r.engine === 'sqlite')
    .map((r) => ({
      engine: r.engine,
      what: `idle RSS after start, ${r.variant}`,
      value: r.fresh_rss_mb ?? Infinity,
      target: `<= ${TARGET_MB} MB`,
      pass: r.fresh_rss_mb !== null && r.fresh_rss_mb <= TARGET_MB,
    }));
  const lines = [
    heading('Memory', started),
    `idle ${idleS} s per reading; load average now ${loadAverage()}`,
    '',
    table([
      ['engine', 'variant', 'fresh RSS MB', 'fresh peak MB', 'operating RSS MB', 'operating peak MB', 'target'],
      ...results.map((r) => [
        r.engine,
        r.variant,
        show(r.fresh_rss_mb),
        show(r.fresh_hwm_mb),
        show(r.operating_rss_mb),
        show(r.operating_hwm_mb),
        r.engine === 'sqlite' ? `fresh <= ${TARGET_MB}: ${r.fresh_rss_mb !== null && r.fresh_rss_mb <= TARGET_MB ? 'PASS' : 'MISS'}` : '',
      ]),
    ]),
    '',
  ];
  printReport(lines, checks, mysqlSkipped, { ...machine('memory', started), idle_s: idleS, results });
});
