import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import { startDaemon } from './daemon.ts';
import { freePort } from './wait.ts';
import { testNeeding } from './needs.ts';

/** Debian's `prometheus-alertmanager` (installed by .ci/run); ALERTMANAGER_BIN overrides it. */
export const ALERTMANAGER_BIN = process.env.ALERTMANAGER_BIN?.trim() || '/usr/bin/prometheus-alertmanager';

/**
 * Declares a test that needs a real Alertmanager. When the binary is absent it is skipped with
 * the reason in its title, and under CI=true it fails instead: CI must run it (as mariadbTest).
 */
export function alertmanagerTest(title: string, fn: (t: ExecutionContext) => Promise<void>): void {
  testNeeding(existsSync(ALERTMANAGER_BIN) ? null : `${ALERTMANAGER_BIN} not found (apt-get install prometheus-alertmanager)`, title, fn);
}

// Kept here too for the tests that import them from this file; they live in wait.ts, which imports nothing of ava.
export { freePort, waitFor } from './wait.ts';

export interface RunningAlertmanager {
  /** `http://127.0.0.1:<port>` */
  base: string;
  /** Everything it wrote on stdout and stderr (its logs), for failure messages. */
  output(): string;
}

/**
 * Starts Alertmanager with `config` (YAML) on a loopback port, clustering off, its storage in a
 * temp dir, and waits for `/-/ready`. It is killed and its files removed after the test, always.
 */
export async function startAlertmanager(t: ExecutionContext, config: string): Promise<RunningAlertmanager> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-am-'));
  const configFile = path.join(dir, 'alertmanager.yml');
  writeFileSync(configFile, config);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const { output } = await startDaemon(t, {
    name: 'alertmanager',
    bin: ALERTMANAGER_BIN,
    dir,
    base,
    args: [
      `--config.file=${configFile}`,
      `--storage.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--cluster.listen-address=',
      '--log.level=debug',
    ],
  });
  return { base, output };
}
