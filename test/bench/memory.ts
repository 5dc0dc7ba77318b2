/**
 * `npm run bench:memory` (issue 24, "Leaner"): the service's idle memory. Target: RSS at most
 * 120 MB after start on SQLite, for the service as production runs it: the release package.
 *
 * Per variant, the real service on a fresh store, started as the benchmarks start it
 * (test/bench/service.ts), then left alone for --idle seconds (BENCH_IDLE, 20); VmRSS and VmHWM
 * are read from /proc/<pid>/status. Then it is made `operating` (a licence and the first owner:
 * its background passes run) and left alone again, and read again. The variants: the checkout's
 * `node host/main.ts` (as `npm start` runs it), and the release package's compiled JavaScript,
 * `node --no-experimental-strip-types host/main.js` (docs/install.md; compiled here by
 * bin/compile.js, the package's `prepack`, in a copy of the source that shares this checkout's
 * node_modules), each plainly and with MALLOC_ARENA_MAX=2, as the systemd unit runs it
 * (examples/systemd/oncall.service). SQLite, and MySQL when SERVICE_DATABASE_URL names a server.
 * `--form checkout|package` runs one form only. Stores, copies and processes are removed in every case.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { copySource } from '../helpers/source-copy.ts';
import {
  cleanups,
  count,
  enginesToRun,
  heading,
  loadAverage,
  machine,
  option,
  printReport,
  procStatusMb,
  runBenchmark,
  table,
  type Check,
  type Engine,
} from './common.ts';
import { makeOperating, withService, type StartCommand } from './service.ts';

const TARGET_MB = 120;
const ADMIN_TOKEN = `bench-admin-${randomBytes(16).toString('hex')}`;
const SECRET_KEY = 'memory-benchmark-secret-key-0123456789abcdef';

type Form = 'checkout' | 'package';
const FORMS: Array<{ form: Form; name: string }> = [
  { form: 'checkout', name: 'node host/main.ts' },
  { form: 'package', name: 'package: node --no-experimental-strip-types host/main.js' },
];
const ARENAS: Array<{ name: string; env: Record<string, string> }> = [
  { name: '', env: {} },
  { name: ', MALLOC_ARENA_MAX=2 (systemd)', env: { MALLOC_ARENA_MAX: '2' } },
];

/** The release package's form: the source copied and compiled as `npm pack` compiles it; `remove` it after (or it goes on any exit). */
function compiledCopy(): { start: StartCommand; remove: () => Promise<void> } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oncall-bench-memory-package-'));
  const remove = async () => {
    cleanups.delete(remove);
    rmSync(dir, { recursive: true, force: true });
  };
  cleanups.add(remove);
  copySource(dir);
  const r = spawnSync(process.execPath, ['bin/compile.js'], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`bin/compile.js failed: ${r.stdout}${r.stderr}`);
  return { start: { cwd: dir, args: ['--no-experimental-strip-types', 'host/main.js'] }, remove };
}

interface Figures {
  engine: Engine;
  form: Form;
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
  const only = option('form', 'BENCH_FORM');
  if (only !== undefined && only !== 'checkout' && only !== 'package') throw new Error(`--form must be checkout or package, not ${only}`);
  const forms = FORMS.filter((f) => only === undefined || f.form === only);
  const compiled = forms.some((f) => f.form === 'package') ? compiledCopy() : null;
  const variants = forms.flatMap((f) =>
    ARENAS.map((a) => ({ form: f.form, name: f.name + a.name, env: a.env, start: f.form === 'package' ? compiled!.start : undefined })),
  );
  const results: Figures[] = [];
  for (const engine of engines) {
    for (const v of variants) {
      results.push(
        await withService(
          engine,
          serverUrl,
          'memory',
          { adminToken: ADMIN_TOKEN, secretKey: SECRET_KEY, profile: false, env: v.env, start: v.start },
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
              form: v.form,
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
  await compiled?.remove();
  const show = (n: number | null) => (n === null ? '-' : n.toFixed(1));
  // The target is the production service's; a checkout's TypeScript is shown beside it.
  const targeted = (r: Figures) => r.engine === 'sqlite' && r.form === 'package';
  const checks: Check[] = results.filter(targeted).map((r) => ({
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
        targeted(r) ? `fresh <= ${TARGET_MB}: ${r.fresh_rss_mb !== null && r.fresh_rss_mb <= TARGET_MB ? 'PASS' : 'MISS'}` : '',
      ]),
    ]),
    '',
  ];
  printReport(lines, checks, mysqlSkipped, { ...machine('memory', started), idle_s: idleS, results });
});
