// Debian's node_exporter for the host pack's live tests: started on a loopback port with the
// collectors a test names, reading the machine's real kernel, a process's view of it, or (where
// no real condition can be made on a shared machine, and the test says so) files of the test's own.
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import { startDaemon } from './daemon.ts';
import { NODE_EXPORTER_BIN } from './exporter-bins.ts';
import { testNeeding } from './needs.ts';
import { freePort } from './wait.ts';

/** Why node_exporter cannot run here, or null. */
export const nodeExporterMissing: string | null = existsSync(NODE_EXPORTER_BIN)
  ? null
  : `${NODE_EXPORTER_BIN} not found (apt-get install prometheus-node-exporter)`;

/** Declares a test that needs Debian's node_exporter and Prometheus (skipped without them, failed under CI=true). */
export function nodeExporterTest(missing: string | null, title: string, fn: (t: ExecutionContext) => Promise<void>): void {
  testNeeding(nodeExporterMissing ?? missing, title, fn);
}

/**
 * Starts node_exporter with only `collectors` on (`--collector.disable-defaults`) and `args`
 * (flags of those collectors, `--path.procfs`, ...) and answers its scrape target once it serves.
 * Stopped after the test.
 */
export async function startNodeExporter(t: ExecutionContext, collectors: string[], args: string[] = []): Promise<{ target: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-node-exporter-'));
  const port = await freePort();
  const target = `127.0.0.1:${port}`;
  await startDaemon(t, {
    name: 'node_exporter',
    bin: NODE_EXPORTER_BIN,
    args: [`--web.listen-address=${target}`, '--collector.disable-defaults', ...collectors.map((c) => `--collector.${c}`), ...args],
    dir,
    base: `http://${target}`,
  });
  return { target };
}

/**
 * A directory of files the test writes, for a collector that reads them: a `--path.procfs` of its
 * own (`stat`, `sys/fs/file-nr`) or a textfile collector directory. Removed after the test.
 */
export function filesDir(t: ExecutionContext): { dir: string; write(name: string, text: string): void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-node-files-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return {
    dir,
    write(name, text) {
      mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      // Written aside and renamed, so the exporter never reads half a file.
      writeFileSync(path.join(dir, `${name}.tmp`), text);
      renameSync(path.join(dir, `${name}.tmp`), path.join(dir, name));
    },
  };
}
