import canonicalize from 'canonicalize';
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { ConnectorStatus } from './connectors.repo.ts';

/** What a test or check answers: a failure is data (200), with the reason. */
export interface TestReport {
  ok: boolean;
  problem: string | null;
  kind: string;
  version: string;
  found: Record<string, unknown> | null;
  took_ms: number;
  /** The cut-off the call ran under. */
  timeout_s: number;
  checked_at: string;
}

/** A test counts as the saved connector's first check when it is saved within this time of it. */
export const TEST_REMEMBERED_MS = 15 * 60 * 1000;
const TESTS_REMEMBERED = 200;

/** A test's outcome as the connector's last check. */
export function statusOfTest(name: string, report: TestReport, kind = report.kind): ConnectorStatus {
  return {
    name,
    kind,
    ok: report.ok,
    last_problem: report.problem,
    last_checked_at: report.checked_at,
    found: report.found,
    failed_by: report.ok ? null : 'test',
  };
}

/**
 * Recent test outcomes in this process, by a hash of the kind and complete settings (secrets
 * included, never stored as such): a save of exactly the settings just tested records that
 * test as the connector's last check instead of "not checked since saved".
 */
export class TestMemory {
  readonly #tested = new Map<string, TestReport>();
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  remember(kind: string, settings: Record<string, unknown>, report: TestReport): void {
    const key = testKey(kind, settings);
    this.#tested.delete(key);
    this.#tested.set(key, report);
    while (this.#tested.size > TESTS_REMEMBERED) this.#tested.delete(this.#tested.keys().next().value!);
  }

  /** The test of exactly these settings in the last TEST_REMEMBERED_MS, or null. */
  recall(kind: string, settings: Record<string, unknown>): TestReport | null {
    const report = this.#tested.get(testKey(kind, settings));
    if (report === undefined) return null;
    const age = this.#clock.now().getTime() - Date.parse(report.checked_at);
    return age >= 0 && age <= TEST_REMEMBERED_MS ? report : null;
  }
}

function testKey(kind: string, settings: Record<string, unknown>): string {
  return createHash('sha256')
    .update(canonicalize({ kind, settings }) ?? '')
    .digest('hex');
}
