/**
 * `npm run eval`: the evaluation of real faults (docs/packs.md, "The evaluation of real faults").
 * Starts everything itself on loopback (the service as a real process, Debian's Prometheus,
 * Alertmanager, node_exporter and blackbox exporter, nginx, Redis and a RabbitMQ node with their
 * exporters, the eval's own apps, git repositories),
 * injects the scenarios' faults (scenarios.ts), judges each diagnosis from the API, prints a block
 * per scenario and a summary line, and stops everything.
 *
 *   npm run eval                          one run on SQLite
 *   EVAL_DATABASE_URL=mysql://root@127.0.0.1:3306 npm run eval     on MariaDB (a fresh database, dropped at the end)
 *   npm run eval -- --runs 3              three runs in a row (the done-bar: all three right)
 *   npm run eval -- --only crash-loop     one scenario
 *   npm run eval -- --markdown eval.md    also the table as Markdown, for docs/packs.md
 *   npm run eval -- --episodes eval.json  also every episode as the service answered it (verdicts, evidence, timeline)
 *
 * Exit 0 when every scenario of every run is right and the ledger verifies; 1 otherwise; 2 when
 * the eval cannot run here (a missing program, not root).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { cleanupAll, count, cpuModel, option, running, type Engine } from '../bench/common.ts';
import { ALERTMANAGER_BIN, BLACKBOX_BIN, NODE_EXPORTER_BIN, PROMETHEUS_BIN } from './bins.ts';
import { RABBITMQ_SERVER } from '../helpers/rabbitmq.ts';
import { REDIS_BIN, REDIS_EXPORTER_BIN } from '../helpers/redis.ts';
import { NGINX_BIN, NGINX_EXPORTER_BIN } from '../helpers/web-tier.ts';
import { oneRun } from './one-run.ts';
import { markdown, summaryLine, tally, text, type RunReport } from './report.ts';
import { SCENARIOS } from './scenarios.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Why the eval cannot run on this machine, or null. */
function missing(): string | null {
  for (const [bin, pkg] of [
    [PROMETHEUS_BIN, 'prometheus'],
    [ALERTMANAGER_BIN, 'prometheus-alertmanager'],
    [NODE_EXPORTER_BIN, 'prometheus-node-exporter'],
    [BLACKBOX_BIN, 'prometheus-blackbox-exporter'],
    [NGINX_BIN, 'nginx'],
    [NGINX_EXPORTER_BIN, 'prometheus-nginx-exporter'],
    [REDIS_BIN, 'redis-server'],
    [REDIS_EXPORTER_BIN, 'prometheus-redis-exporter'],
    [RABBITMQ_SERVER, 'rabbitmq-server'],
  ])
    if (!existsSync(bin!)) return `${bin} not found (apt-get install ${pkg})`;
  for (const cmd of ['git', 'unshare'])
    try {
      execFileSync('which', [cmd], { stdio: 'ignore' });
    } catch {
      return `${cmd} not found`;
    }
  if (process.getuid?.() !== 0) return 'not root: filling a host disk mounts a tmpfs in a mount namespace of its own (unshare)';
  return null;
}

function commit(): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: ROOT }).toString().trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT }).toString().trim() !== '';
    return dirty ? `${sha}+changes` : sha;
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<number> {
  const why = missing();
  if (why !== null) {
    process.stdout.write(`eval: cannot run here: ${why}\n`);
    return 2;
  }
  const runs = count('runs', 'EVAL_RUNS', 1);
  const only = option('only', 'EVAL_ONLY');
  const file = option('markdown', 'EVAL_MARKDOWN');
  const dump = option('episodes', 'EVAL_EPISODES');
  const episodes: Array<{ run: number; episodes: unknown[] }> = [];
  const scenarios = only === undefined ? SCENARIOS : SCENARIOS.filter((s) => only.split(',').includes(s.id));
  if (scenarios.length === 0) {
    process.stdout.write(`eval: no scenario ${only}; there are ${SCENARIOS.map((s) => s.id).join(', ')}\n`);
    return 2;
  }
  const serverUrl = process.env.EVAL_DATABASE_URL?.trim() || null;
  const engine: Engine = serverUrl === null ? 'sqlite' : 'mysql';
  const machine = `${os.cpus().length} × ${cpuModel()}, ${Math.round(os.totalmem() / 1024 ** 3)} GB, Node ${process.version}, load ${os.loadavg()[0]!.toFixed(1)}`;
  const log = (s: string) => process.stderr.write(`[eval ${engine}] ${s}\n`);
  const reports: RunReport[] = [];
  let ok = true;
  for (let run = 1; run <= runs; run++) {
    const startedAt = new Date();
    log(`run ${run} of ${runs}: ${scenarios.length} scenarios`);
    const r = await oneRun(engine, serverUrl, scenarios, log);
    const report: RunReport = {
      run,
      of: runs,
      engine: engine === 'mysql' ? 'MariaDB' : 'SQLite',
      startedAt,
      seconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
      commit: commit(),
      machine,
      judged: r.judged,
      ledger: r.ledger,
    };
    reports.push(report);
    process.stdout.write(`\n${text(report)}\n`);
    const t = tally(r.judged);
    if (t.right !== t.total || !r.ledger.startsWith('verifies')) ok = false;
    if (file !== undefined) writeFileSync(file, reports.map(markdown).join('\n'));
    episodes.push({ run, episodes: r.episodes });
    if (dump !== undefined) writeFileSync(dump, `${JSON.stringify(episodes, null, 2)}\n`);
  }
  if (runs > 1) for (const r of reports) process.stdout.write(`${summaryLine(r)}\n`);
  return ok ? 0 : 1;
}

process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    process.stderr.write(`\n${signal}: stopping everything the eval started\n`);
    void cleanupAll().finally(() => process.exit(130));
  });
try {
  process.exitCode = await main();
} catch (e) {
  process.stderr.write(`eval failed: ${(e as Error).stack ?? String(e)}\n`);
  await cleanupAll();
  process.exitCode = 2;
}
