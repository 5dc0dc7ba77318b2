import type { Clock } from '../clock.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import { callable, callConnector, clipProblem, jsonOnly } from './connector-calls.ts';
import { failure, type ConnectorFailure } from './connector-failure.ts';
import type { ConnectorsRepo, ConnectorStatus } from './connectors.repo.ts';
import type { ConnectorStore } from './connectors.store.ts';
import { cutOffMs } from './runner.ts';
import { scrubJson } from './secrets.ts';

export type PollReport<T> =
  { ok: true; kind: string; alerts: number; taken: T; took_ms: number } | { ok: false; kind: string; problem: string; took_ms: number };

export interface PollDeps {
  store: ConnectorStore;
  repo: ConnectorsRepo;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
}

/**
 * The configured connectors whose kind can `pollAlerts` and that can be used now (no
 * configuration fault), with their `poll_s` setting when they have one.
 */
export async function pollable(store: ConnectorStore): Promise<Array<{ name: string; kind: string; poll_s: number | null }>> {
  return (await store.all())
    .filter((r) => r.fault === null && r.settings !== null && r.type !== null && typeof r.type.plugin.pollAlerts === 'function')
    .map((r) => ({ name: r.name, kind: r.kind, poll_s: typeof r.settings!.poll_s === 'number' ? r.settings!.poll_s : null }));
}

/** The sentence a poll failure is shown as: every one says it was the poll. */
function pollProblem(f: ConnectorFailure): string {
  // A throw already reads "the poll failed: ..."; a bad answer and a refusal say what they are.
  const said = f.reason === 'threw' || f.reason === 'bad_answer' || f.reason === 'refused' ? f.problem : `the poll failed: ${f.problem}`;
  return clipProblem(said);
}

/**
 * Polls one connector for its alerts (cut off as every call) and hands them to `take` (the
 * intake). A throw, a bad answer, the cut-off or `take` refusing the alerts is a failed poll:
 * nothing is taken, the problem becomes the connector's last problem (`failed_by: poll`), and
 * the ledger records `connector.poll_failed` when the problem is new (not every minute while it
 * lasts). A poll that works marks the connector ok; after a poll's failure (`failed_by: poll`)
 * that is recorded as `connector.poll_recovered`.
 */
export async function pollWith<T>(d: PollDeps, name: string, take: (kind: string, alerts: unknown[]) => Promise<T>): Promise<PollReport<T>> {
  const started = performance.now();
  const took = () => Math.round(performance.now() - started);
  const r = await d.store.resolve(name);
  let failed: ConnectorFailure | null = null;
  let alerts: unknown[] = [];
  const ready = callable(r, 'poll', (t) => typeof t.plugin.pollAlerts === 'function', `connectors of kind ${r.kind} cannot be polled`);
  if (!ready.ok) failed = ready.failure;
  else {
    const { c } = ready;
    const outcome = await callConnector({
      job: 'poll',
      c,
      timeoutMs: cutOffMs(c.settings),
      log: d.log,
      call: (ctx) => (c.type.plugin.pollAlerts as (x: unknown) => unknown).call(c.type.plugin, ctx),
    });
    if (!outcome.ok) failed = outcome.failure;
    else if (!Array.isArray(outcome.value)) failed = failure('poll', 'bad_answer', 'the poll answered something that is not a list of alerts');
    else alerts = scrubJson(jsonOnly(outcome.value), c.secrets) as unknown[];
  }
  let taken: T | undefined;
  if (failed === null) {
    try {
      taken = await take(r.kind, alerts);
    } catch (e) {
      failed = failure('poll', 'refused', `the polled alerts were refused: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  const before = await d.repo.status(name);
  const at = d.clock.now().toISOString();
  const found = before?.kind === r.kind ? before.found : null;
  if (failed !== null) {
    const problem = pollProblem(failed);
    const status: ConnectorStatus = { name, kind: r.kind, ok: false, last_problem: problem, last_checked_at: at, found, failed_by: 'poll' };
    const isNew = before === null || before.ok || before.last_problem !== problem;
    d.log.warn({ connector: name, kind: r.kind }, problem);
    if (!isNew) await d.repo.putStatus(status);
    else {
      await d.ledger.transact(async (trx, record) => {
        await d.repo.putStatus(status, trx);
        await record({
          type: 'connector.poll_failed',
          actor: 'system',
          reason: `polling connector ${name} failed: ${problem}`,
          data: { name, kind: r.kind, problem },
        });
      });
    }
    return { ok: false, kind: r.kind, problem, took_ms: took() };
  }
  if (before === null || !before.ok || before.kind !== r.kind) {
    const status: ConnectorStatus = { name, kind: r.kind, ok: true, last_problem: null, last_checked_at: at, found, failed_by: null };
    if (before === null || before.kind !== r.kind || before.last_problem === null || before.failed_by !== 'poll') await d.repo.putStatus(status);
    else {
      await d.ledger.transact(async (trx, record) => {
        await d.repo.putStatus(status, trx);
        await record({ type: 'connector.poll_recovered', actor: 'system', reason: `polling connector ${name} works again`, data: { name, kind: r.kind } });
      });
    }
  }
  return { ok: true, kind: r.kind, alerts: alerts.length, taken: taken as T, took_ms: took() };
}
