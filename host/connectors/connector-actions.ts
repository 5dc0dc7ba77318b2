import type { Logger } from '../log.ts';
import type { ActionDeclaration, ActionRequest } from '../plugins/contract.ts';
import { clip } from '../text.ts';
import { callable, callConnector, clipProblem, isObj, jsonOnly } from './connector-calls.ts';
import { failure, type CallJob, type ConnectorFailure } from './connector-failure.ts';
import type { ConnectorStore } from './connectors.store.ts';
import { MAX_TIMEOUT_MS, MIN_TIMEOUT_MS } from './runner.ts';
import { clone, scrubJson, scrubText } from './secrets.ts';

/**
 * The host side of connector actions (plugin API 1.2): `rehearse`, `act` and `undo` of an action
 * kind a connector's manifest declares. These are the only connector calls that change anything
 * outside, and only the acting area calls them (through ConnectorService); a check context has
 * no way here. Each call resolves the connector, checks its kind declares the action (and, for
 * `rehearse` and `undo`, that it is rehearsable or reversible), validates `params` against the
 * declaration's schema, runs the plugin guarded (runner.ts: cut-off, throws caught) and scrubs
 * what comes back of the connector's secrets. Never throws: every failure is a report.
 */

/** Which of the three action calls. */
export type ActionCall = 'rehearse' | 'act' | 'undo';

/** An `undo` request: the action as it was acted, plus what `act` answered in `undo`. */
export type UndoRequest = ActionRequest & { undo: Record<string, unknown> };

/** What one action call answered, for the acting area to record. */
export interface ActionReport {
  /** The call made (or refused). */
  call: ActionCall;
  /** The connector's kind, or null when no connector of that name is configured. */
  kind: string | null;
  ok: boolean;
  /** Null when `ok`; else why not, in words (scrubbed of the connector's secrets). */
  problem: string | null;
  /**
   * Null when `ok`; else why not, for code: `unusable` (no such connector, a configuration
   * fault), `not_declared`, `invalid_params` (the plugin was not called), `threw`, `cut_off`,
   * `bad_answer`, `said_no` (the plugin answered `ok: false`). After `cut_off` or `threw` from
   * `act`, the outside system may have changed: a retry with the same `key` is how to find out.
   */
  reason: ConnectorFailure['reason'] | null;
  /** From `rehearse`: the connector cannot rehearse it with its settings (not a failed rehearsal). */
  not_rehearsable: boolean;
  /** What the plugin says it did or would do; null when it said nothing. */
  shown: string | null;
  /** From a successful `act`: what `undo` needs (small plain JSON), else null. */
  undo: Record<string, unknown> | null;
  took_ms: number;
}

/** A configured connector whose kind declares actions, with what each can do. */
export interface ActionableConnector {
  name: string;
  kind: string;
  /** What stops the connector being used (a configuration fault, incomplete settings), or null. */
  fault: string | null;
  /** By action kind: the declaration (rehearsable and reversible only when the plugin can), and what stops that action being used, or null. */
  actions: Record<string, ActionDeclaration & { problem: string | null }>;
}

/** The longest an action call may take: a `timeout_s` setting up to 60 s, plus one second. */
export const MAX_ACTION_TIMEOUT_MS = 61_000;
const MAX_SHOWN = 2000;
const MAX_UNDO_BYTES = 4 * 1024;

const JOB: Record<ActionCall, CallJob> = { rehearse: 'rehearsal', act: 'action', undo: 'undo' };

/**
 * The cut-off of an action call: the connector's `timeout_s` + 1 s (at most 61 s: pushing a
 * revert may take longer than a read), else 15 s.
 */
export function actionCutOffMs(settings: Record<string, unknown>): number {
  const t = settings.timeout_s;
  if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0) return MAX_TIMEOUT_MS;
  return Math.max(MIN_TIMEOUT_MS, Math.min(MAX_ACTION_TIMEOUT_MS, Math.round(t * 1000) + 1000));
}

/** Every configured connector whose kind declares at least one action. */
export async function actionable(store: ConnectorStore): Promise<ActionableConnector[]> {
  return (await store.all())
    .filter((r) => r.type !== null && r.type.actions.size > 0)
    .map((r) => ({
      name: r.name,
      kind: r.kind,
      fault: r.fault ?? (r.settings === null ? 'its settings are incomplete' : null),
      actions: Object.fromEntries([...r.type!.actions].map(([name, a]) => [name, { ...a.declaration, problem: a.problem }])),
    }));
}

/** Runs `rehearse`, `act` or `undo` of `request.kind` on the connector `name`; see the file's comment. */
export async function actionWith(
  d: { store: ConnectorStore; log: Logger },
  call: ActionCall,
  name: string,
  request: ActionRequest | UndoRequest,
): Promise<ActionReport> {
  const started = performance.now();
  const job = JOB[call];
  const report = (
    kind: string | null,
    f: ConnectorFailure | null,
    shown: string | null = null,
    undo: Record<string, unknown> | null = null,
    notRehearsable = false,
  ): ActionReport => ({
    call,
    kind,
    not_rehearsable: notRehearsable,
    ok: f === null,
    problem: f === null ? null : clipProblem(f.problem),
    reason: f?.reason ?? null,
    shown,
    undo,
    took_ms: Math.round(performance.now() - started),
  });
  const r = await d.store.resolve(name).catch(() => null);
  if (r === null) return report(null, failure(job, 'unusable', `no connector named ${clip(name, 64, '…')} is configured`));
  const refused = refusal(r.type?.actions.get(request.kind), call, r.kind, request);
  const ready = callable(r, job, null, '');
  if (!ready.ok) return report(r.kind, ready.failure);
  if (refused !== null) return report(r.kind, failure(job, refused.reason, refused.problem));
  const { c } = ready;
  const fn = c.type.plugin[call] as (ctx: unknown, action: unknown) => unknown;
  const outcome = await callConnector({
    job,
    c,
    timeoutMs: actionCutOffMs(c.settings),
    log: d.log,
    call: (ctx) => fn.call(c.type.plugin, ctx, clone(request)),
  });
  const out = outcome.ok ? readResult(job, call, outcome.value, c.secrets, d.log) : { failure: outcome.failure, shown: null, undo: null };
  const notRehearsable = call === 'rehearse' && outcome.ok && isObj(outcome.value) && outcome.value.ok === false && outcome.value.not_rehearsable === true;
  const done = report(r.kind, out.failure, out.shown, out.undo, notRehearsable);
  d.log.info(
    { connector: name, kind: r.kind, action: request.kind, call, ok: done.ok, reason: done.reason, took_ms: done.took_ms, episode: request.episode.id },
    done.ok ? `${call} ${request.kind} on connector ${name}: ok` : `${call} ${request.kind} on connector ${name} failed: ${done.problem}`,
  );
  return done;
}

/** Why the call cannot be made: the action is not declared (or not rehearsable/reversible), or its params do not fit. */
function refusal(
  action: { declaration: ActionDeclaration; problem: string | null; validate(p: unknown): string | null } | undefined,
  call: ActionCall,
  kind: string,
  request: ActionRequest | UndoRequest,
): { reason: 'not_declared' | 'invalid_params'; problem: string } | null {
  const what = clip(String(request.kind), 40, '…');
  if (action === undefined) return { reason: 'not_declared', problem: `connectors of kind ${kind} do not perform ${what}` };
  if (action.problem !== null) return { reason: 'not_declared', problem: action.problem };
  if (call === 'rehearse' && !action.declaration.rehearsable)
    return { reason: 'not_declared', problem: `${what} on connectors of kind ${kind} cannot be rehearsed` };
  if (call === 'undo' && !action.declaration.reversible) return { reason: 'not_declared', problem: `${what} on connectors of kind ${kind} cannot be undone` };
  if (call === 'undo' && !isObj((request as UndoRequest).undo))
    return { reason: 'invalid_params', problem: 'undo needs what act answered in undo (an object)' };
  if (!isObj(request.params)) return { reason: 'invalid_params', problem: 'params must be an object' };
  const invalid = action.validate(request.params);
  return invalid === null ? null : { reason: 'invalid_params', problem: invalid };
}

/**
 * The plugin's `{ok, problem, shown?, undo?}` checked and scrubbed. A successful `act` stays a
 * success even when its `undo` is unusable (the outside system changed all the same): `undo` is
 * then null and a warning logged.
 */
function readResult(
  job: CallJob,
  call: ActionCall,
  value: unknown,
  secrets: string[],
  log: Logger,
): { failure: ConnectorFailure | null; shown: string | null; undo: Record<string, unknown> | null } {
  if (!isObj(value) || typeof value.ok !== 'boolean')
    return { failure: failure(job, 'bad_answer', `the ${job} answered something that is not {ok, problem}`), shown: null, undo: null };
  const shown = typeof value.shown === 'string' && value.shown.trim() !== '' ? clip(scrubText(value.shown, secrets), MAX_SHOWN, '…') : null;
  if (!value.ok) {
    const said = typeof value.problem === 'string' && value.problem.trim() !== '' ? value.problem : `the ${job} failed without a reason`;
    return { failure: failure(job, 'said_no', scrubText(said, secrets)), shown, undo: null };
  }
  if (call !== 'act' || value.undo === undefined || value.undo === null) return { failure: null, shown, undo: null };
  const undo = scrubJson(jsonOnly(value.undo), secrets);
  if (!isObj(undo) || JSON.stringify(undo).length > MAX_UNDO_BYTES) {
    log.warn({ job }, `the ${job} succeeded but its undo is not a plain object of at most ${MAX_UNDO_BYTES / 1024} KiB; it cannot be undone`);
    return { failure: null, shown, undo: null };
  }
  return { failure: null, shown, undo };
}
