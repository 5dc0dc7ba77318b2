import { existsSync } from 'node:fs';
import type { ExecutionContext } from 'ava';
import { testNeeding } from './needs.ts';
import { PROMETHEUS_BIN } from './prometheus-server.ts';

// The server itself is in prometheus-server.ts (no ava runtime there, so benchmarks can start it too).
export { PROMETHEUS_BIN, PROMETHEUS_USER, startPrometheus, type RunningPrometheus, type ScrapeJob } from './prometheus-server.ts';

/**
 * Declares a test that needs a real Prometheus server. When the binary is absent it is skipped
 * with the reason in its title, and under CI=true it fails instead: CI must run it.
 */
export function prometheusTest(title: string, fn: (t: ExecutionContext) => Promise<void>): void {
  testNeeding(existsSync(PROMETHEUS_BIN) ? null : `${PROMETHEUS_BIN} not found (apt-get install prometheus)`, title, fn);
}
