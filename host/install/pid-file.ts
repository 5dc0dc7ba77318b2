import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';

/** Names the process serving a data directory, so that a second service or `oncall restore` can see it. */
export const PID_FILE = 'service.pid';

export interface PidRecord {
  pid: number;
  /** The process's start time from /proc (clock ticks since boot): a reused pid has another. Null where there is no /proc. */
  start: string | null;
  host: string;
  started_at: string;
}

/** Another service process holds this data directory. */
export class DataDirInUseError extends Error {
  readonly holder: PidRecord;

  constructor(dataDir: string, holder: PidRecord) {
    super(`another oncall service (pid ${holder.pid}, started ${holder.started_at}) is running on ${dataDir}: stop it first`);
    this.holder = holder;
  }
}

function startOf(pid: number): string | null {
  try {
    // Field 22 of /proc/<pid>/stat, counted after the command name (which may hold spaces).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function alive(rec: PidRecord): boolean {
  try {
    process.kill(rec.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const start = startOf(rec.pid);
  return rec.start === null || start === null || start === rec.start;
}

/**
 * The service process running on `dataDir` now, or null: a pid file whose process is alive
 * (the same pid and start time, on this host). A file left by a process that died is ignored.
 */
export function runningService(dataDir: string): PidRecord | null {
  let rec: PidRecord;
  try {
    rec = JSON.parse(readFileSync(path.join(dataDir, PID_FILE), 'utf8')) as PidRecord;
  } catch {
    return null;
  }
  if (!Number.isInteger(rec.pid) || rec.host !== hostname()) return null;
  return alive(rec) ? rec : null;
}

/**
 * Writes this process into the data directory's pid file (mode 0600), refusing when another
 * live process is in it (one service per SQLite file; `oncall restore` refuses while it runs).
 * Returns what removes it again, only while it is still ours.
 */
export function claimPidFile(dataDir: string, now: Date): () => void {
  const holder = runningService(dataDir);
  if (holder !== null && holder.pid !== process.pid) throw new DataDirInUseError(dataDir, holder);
  const file = path.join(dataDir, PID_FILE);
  const rec: PidRecord = { pid: process.pid, start: startOf(process.pid), host: hostname(), started_at: now.toISOString() };
  writeFileSync(file, JSON.stringify(rec) + '\n', { mode: 0o600 });
  return () => {
    if (runningService(dataDir)?.pid === process.pid) rmSync(file, { force: true });
  };
}
