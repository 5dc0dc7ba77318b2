import canonicalize from 'canonicalize';
import type { Clock } from '../clock.ts';
import type { Principal } from '../identity/principal.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import { callConnector, clipProblem, isObj, jsonOnly, secretValues } from './connector-calls.ts';
import { NAME_PATTERN } from './connectors.file.ts';
import type { ConnectorsRepo } from './connectors.repo.ts';
import type { ConnectorInput, ConnectorStore, ConnectorView, Resolved } from './connectors.store.ts';
import type { ConnectorKind, ConnectorKinds } from './kinds.ts';
import { cutOffMs } from './runner.ts';
import { scrubJson, scrubText } from './secrets.ts';
import { statusOfTest, type TestMemory, type TestReport } from './test-memory.ts';

const MAX_FOUND_BYTES = 8 * 1024;

export interface ConnectorTestsDeps {
  store: ConnectorStore;
  repo: ConnectorsRepo;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  kinds: ConnectorKinds;
  tests: TestMemory;
}

/**
 * Tests and checks: a connector's `test` run on settings before they are saved, on demand on a
 * configured connector (Check), and on the schedule (host/schedule/connector-checker.ts). A check's
 * outcome becomes the connector's last check.
 */
export class ConnectorTests {
  readonly #d: ConnectorTestsDeps;

  constructor(deps: ConnectorTestsDeps) {
    this.#d = deps;
  }

  /**
   * Tests settings without saving them. With `name` of a saved connector of the same kind,
   * omitted or blank secrets are taken from it, and when the settings tested are exactly the
   * saved ones the outcome becomes its last check.
   */
  async test(input: ConnectorInput & { name?: string }, who: Principal): Promise<TestReport> {
    const { store, repo, ledger, kinds, tests } = this.#d;
    const type = kinds.require(input.kind);
    let saved: Resolved | null = null;
    if (input.name !== undefined && NAME_PATTERN.test(input.name)) {
      saved = await store.resolve(input.name).catch(() => null);
      if (saved !== null && saved.kind !== input.kind) saved = null;
    }
    const settings = store.merge(type, input.settings, saved?.settings ?? null);
    const report = await this.run(input.name ?? null, type, settings);
    tests.remember(input.kind, settings, report);
    const sameAsSaved = saved !== null && saved.settings !== null && canonicalize(saved.settings) === canonicalize(settings);
    await ledger.transact(async (trx, record) => {
      if (sameAsSaved) await repo.putStatus(statusOfTest(saved!.name, report), trx);
      await record({
        type: 'connector.tested',
        actor: who.actor,
        reason: report.ok ? `${input.kind} connector test passed` : `${input.kind} connector test failed: ${report.problem}`,
        data: { name: input.name ?? null, kind: input.kind, ok: report.ok, problem: report.problem, saved_status_updated: sameAsSaved },
      });
    });
    return report;
  }

  /** Tests a configured connector as saved (or as its file says) and records the outcome as its last check. */
  async check(name: string, who: Principal | null): Promise<ConnectorView & { check: TestReport | null }> {
    const { store, repo, ledger } = this.#d;
    const r = await store.resolve(name);
    let report: TestReport | null = null;
    if (r.fault === null && r.type !== null && r.settings !== null) {
      report = await this.run(name, r.type, r.settings);
      const status = statusOfTest(name, report, r.kind);
      if (who === null) await repo.putStatus(status);
      else {
        await ledger.transact(async (trx, record) => {
          await repo.putStatus(status, trx);
          await record({
            type: 'connector.checked',
            actor: who.actor,
            reason: report!.ok ? `connector ${name} is healthy` : `connector ${name}: ${report!.problem}`,
            data: { name, kind: r.kind, source: r.source, ok: report!.ok, problem: report!.problem },
          });
        });
      }
    }
    return { ...store.view(r, await repo.status(name)), check: report };
  }

  /**
   * The scheduled re-check (host/schedule/connector-checker.ts): tests the connector as saved and
   * records the outcome as its last check. A ledger event (`connector.checked`, actor `system`)
   * is written only when the state changes (first check, ok → problem, problem → ok), so a
   * healthy estate does not fill the audit log.
   */
  async checkOnSchedule(name: string): Promise<{ ok: boolean | null; changed: boolean }> {
    const { store, repo, ledger } = this.#d;
    const r = await store.resolve(name);
    if (r.fault !== null || r.type === null || r.settings === null) return { ok: null, changed: false };
    const report = await this.run(name, r.type, r.settings);
    const status = statusOfTest(name, report, r.kind);
    return ledger.transact(async (trx, record) => {
      const before = await repo.status(name, trx);
      await repo.putStatus(status, trx);
      const changed = before === null || before.ok !== report.ok;
      if (changed) {
        await record({
          type: 'connector.checked',
          actor: 'system',
          reason: report.ok ? `scheduled check: connector ${name} is healthy` : `scheduled check: connector ${name}: ${report.problem}`,
          data: { name, kind: r.kind, source: r.source, ok: report.ok, problem: report.problem, scheduled: true },
        });
      }
      return { ok: report.ok, changed };
    });
  }

  /** Runs the kind's `test` on complete settings, cut off at their timeout; a failure is data. */
  async run(name: string | null, type: ConnectorKind, settings: Record<string, unknown>): Promise<TestReport> {
    const timeoutMs = cutOffMs(settings);
    const secrets = secretValues(type, settings);
    const started = performance.now();
    const outcome = await callConnector({
      job: 'test',
      c: { name, kind: type.name, type, settings, secrets },
      timeoutMs,
      log: this.#d.log,
      call: (ctx) => type.plugin.test(Object.keys(type.named).length === 0 ? ctx : { ...ctx, named: type.named }),
    });
    const took = Math.round(performance.now() - started);
    const base = { kind: type.name, version: type.version, took_ms: took, timeout_s: timeoutMs / 1000, checked_at: this.#d.clock.now().toISOString() };
    if (!outcome.ok) return { ok: false, problem: clipProblem(outcome.failure.problem), found: null, ...base };
    const v = outcome.value as { ok?: unknown; problem?: unknown; found?: unknown } | null;
    if (typeof v !== 'object' || v === null || typeof v.ok !== 'boolean')
      return { ok: false, problem: 'the test answered something that is not {ok, problem}', found: null, ...base };
    let found = isObj(v.found) ? (scrubJson(jsonOnly(v.found), secrets) as Record<string, unknown>) : null;
    if (found !== null && JSON.stringify(found).length > MAX_FOUND_BYTES) found = { truncated: true };
    const problem = v.ok
      ? null
      : clipProblem(scrubText(typeof v.problem === 'string' && v.problem !== '' ? v.problem : 'the test failed without a reason', secrets));
    return { ok: v.ok, problem, found, ...base };
  }
}
