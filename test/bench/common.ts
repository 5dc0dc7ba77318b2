/**
 * What the benchmarks share: flags, throwaway stores (a temp data dir and, for MySQL, a
 * `bench_<random>` database beside the one SERVICE_DATABASE_URL names), cleanup on any exit,
 * small figures (memory from /proc, load average, medians) and the report's head, table and
 * last lines. Each benchmark keeps only its own measurements; the benchmarks that drive the
 * real service over HTTP share it from service.ts.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export type Engine = 'sqlite' | 'mysql';

export const MB = 1024 * 1024;

/** One target of a benchmark and whether the run met it. */
export interface Check {
  engine: Engine;
  what: string;
  value: number;
  target: string;
  pass: boolean;
}

/** Child processes to kill and stores to remove, whatever way the benchmark ends. */
export const running = new Set<ChildProcess>();
export const cleanups = new Set<() => Promise<void>>();

export function option(name: string, envName: string): string | undefined {
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === `--${name}`) return argv[i + 1];
    if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
  }
  const v = process.env[envName]?.trim();
  return v === undefined || v === '' ? undefined : v;
}
/** A switch: `--name` given, or `envName` set to 1, true or yes. */
export function flag(name: string, envName: string): boolean {
  return process.argv.slice(2).includes(`--${name}`) || ['1', 'true', 'yes'].includes(process.env[envName]?.trim() ?? '');
}
export function count(name: string, envName: string, fallback: number): number {
  const v = option(name, envName);
  if (v === undefined) return fallback;
  const n = Number(v.replace(/[_,]/g, ''));
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a whole number ≥ 1, not ${v}`);
  return n;
}
export const round1 = (n: number): number => Math.round(n * 10) / 10;
/** The middle value (the upper one of an even count). */
export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
export function mb(bytes: number): number {
  return round1(bytes / MB);
}
/** A memory figure of /proc/<pid>/status in MB: VmHWM (the peak RSS) or VmRSS; null where there is none. */
export function procStatusMb(pid: number | 'self', field: 'VmHWM' | 'VmRSS'): number | null {
  try {
    const kb = new RegExp(`${field}:\\s+(\\d+)\\s*kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? null : mb(Number(kb) * 1024);
  } catch {
    return null;
  }
}
export function loadAverage(): string {
  return os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}
export interface Store {
  dataDir: string;
  databaseUrl: string | null;
  cleanup(): Promise<void>;
}
export async function onServer(url: string, sql: string): Promise<void> {
  const { default: mysql } = await import('mysql2/promise');
  const u = new URL(url.replace(/^mysql2:/, 'mysql:'));
  const conn = await mysql.createConnection({
    host: u.hostname,
    port: u.port === '' ? 3306 : Number(u.port),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    connectTimeout: 10_000,
  });
  try {
    await conn.query(sql);
  } finally {
    await conn.end();
  }
}
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => (i <= 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
export function cpuModel(): string {
  try {
    return /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? 'unknown';
  } catch {
    return os.cpus()[0]?.model ?? 'unknown';
  }
}

/** The report's title line, e.g. `Intake benchmark <start>: Node <version>, <cpus> × <model>`. */
export function heading(title: string, started: Date): string {
  return `${title} benchmark ${started.toISOString()}: Node ${process.version}, ${os.cpus().length} × ${cpuModel()}`;
}
/** The first fields of a report's JSON line: which benchmark, when, on what machine. */
export function machine(bench: string, started: Date) {
  return { bench, at: started.toISOString(), node: process.version, cpus: os.cpus().length, cpu: cpuModel(), mem_gb: Math.round(os.totalmem() / 1024 ** 3) };
}

/** A fresh data dir, and for MySQL a fresh `bench_<random>` database beside the one named. */
export async function createStore(engine: Engine, serverUrl: string | null, prefix: string): Promise<Store> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `oncall-bench-${prefix}-`));
  let databaseUrl: string | null = null;
  let drop = async () => {};
  if (engine === 'mysql') {
    const name = `bench_${randomBytes(6).toString('hex')}`;
    await onServer(serverUrl!, `create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`);
    const u = new URL(serverUrl!);
    u.pathname = `/${name}`;
    databaseUrl = u.toString();
    drop = () => onServer(serverUrl!, `drop database if exists \`${name}\``);
  }
  const cleanup = async () => {
    cleanups.delete(cleanup);
    try {
      await drop();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  };
  cleanups.add(cleanup);
  return { dataDir, databaseUrl, cleanup };
}

/** The report's last lines: MySQL left out, targets met and missed, then the figures as one JSON line. */
export function closingLines(checks: Check[], mysqlSkipped: boolean, summary: unknown): string[] {
  const out: string[] = [];
  if (mysqlSkipped) out.push('mysql: not run (set SERVICE_DATABASE_URL=mysql://root@127.0.0.1:3306/bench to include it)');
  const missed = checks.filter((c) => !c.pass);
  out.push(
    `${checks.length - missed.length} of ${checks.length} targets met${missed.length === 0 ? '' : `; missed: ${missed.map((c) => `${c.engine} ${c.what}`).join('; ')}`}`,
  );
  out.push('', JSON.stringify(summary));
  return out;
}

/** Writes the report to stdout: `lines`, then its closing lines (see closingLines). */
export function printReport(lines: string[], checks: Check[], mysqlSkipped: boolean, summary: unknown): void {
  process.stdout.write([...lines, ...closingLines(checks, mysqlSkipped, summary)].join('\n') + '\n');
}

/** The engines to measure: SQLite always, MySQL when SERVICE_DATABASE_URL names a server; `--only` narrows. */
export function enginesToRun(): { engines: Engine[]; serverUrl: string | null; mysqlSkipped: boolean } {
  const only = option('only', 'BENCH_ONLY');
  const serverUrl = process.env.SERVICE_DATABASE_URL?.trim() || null;
  if (serverUrl !== null && !/^mysql2?:\/\//.test(serverUrl)) throw new Error('SERVICE_DATABASE_URL must start with mysql://');
  if (only !== undefined && only !== 'sqlite' && only !== 'mysql') throw new Error(`--only must be sqlite or mysql, not ${only}`);
  if (only === 'mysql' && serverUrl === null) throw new Error('--only mysql needs SERVICE_DATABASE_URL=mysql://user@host:port/db');
  const engines: Engine[] = [];
  if (only !== 'mysql') engines.push('sqlite');
  if (only !== 'sqlite' && serverUrl !== null) engines.push('mysql');
  return { engines, serverUrl, mysqlSkipped: serverUrl === null && only !== 'sqlite' };
}

export async function cleanupAll(): Promise<void> {
  for (const child of running) child.kill('SIGKILL');
  for (const c of [...cleanups]) await c().catch(() => {});
}

/** Runs a benchmark's main so that no child outlives it and no store is left behind, also on Ctrl-C. */
export async function runBenchmark(name: string, main: () => Promise<void>): Promise<void> {
  process.once('exit', () => {
    for (const child of running) child.kill('SIGKILL');
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: stopping children, removing the benchmark stores\n`);
      void cleanupAll().finally(() => process.exit(130));
    });
  }
  try {
    await main();
  } catch (e) {
    process.stderr.write(`${name} benchmark failed: ${(e as Error).stack ?? String(e)}\n`);
    await cleanupAll();
    process.exitCode = 1;
  }
}
