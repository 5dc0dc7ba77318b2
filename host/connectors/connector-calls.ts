import type { Logger } from '../log.ts';
import type { ConnectorContext } from '../plugins/contract.ts';
import { clip } from '../text.ts';
import { failure, type CallJob, type ConnectorFailure } from './connector-failure.ts';
import type { Resolved } from './connectors.store.ts';
import type { ConnectorKind } from './kinds.ts';
import { runGuarded } from './runner.ts';
import { clone, getAt, secretStrings } from './secrets.ts';

/** The longest problem text kept or answered. */
const MAX_PROBLEM = 1000;

/** A configured connector that can be called: no fault, complete settings, a loaded kind. */
export interface Callable {
  /** Null for settings tested before they are saved. */
  name: string | null;
  kind: string;
  type: ConnectorKind;
  settings: Record<string, unknown>;
  /** The string values of its secret settings, for scrubbing. */
  secrets: string[];
}

/** The connector ready to call, or why it cannot be (a configuration fault first). */
export function callable(
  r: Resolved,
  job: CallJob,
  has: ((type: ConnectorKind) => boolean) | null,
  cannot: string,
): { ok: true; c: Callable } | { ok: false; failure: ConnectorFailure } {
  if (r.fault !== null) return { ok: false, failure: failure(job, 'unusable', r.fault) };
  if (has !== null && (r.type === null || !has(r.type))) return { ok: false, failure: failure(job, 'unusable', cannot) };
  if (r.type === null || r.settings === null) return { ok: false, failure: failure(job, 'unusable', 'its settings are incomplete') };
  return { ok: true, c: { name: r.name, kind: r.kind, type: r.type, settings: r.settings, secrets: secretValues(r.type, r.settings) } };
}

/**
 * Runs one plugin call on a connector, guarded (host/connectors/runner.ts): never throws, never
 * waits past `timeoutMs`; a throw or the cut-off is a typed failure of `job`.
 */
export async function callConnector(opts: {
  job: CallJob;
  c: Callable;
  timeoutMs: number;
  log: Logger;
  call: (ctx: ConnectorContext) => unknown;
}): Promise<{ ok: true; value: unknown } | { ok: false; failure: ConnectorFailure }> {
  const { c } = opts;
  const outcome = await runGuarded({
    what: opts.job,
    timeoutMs: opts.timeoutMs,
    log: opts.log.child({ connector: c.name, kind: c.kind }),
    secrets: c.secrets,
    settings: clone(c.settings),
    call: (ctx) => opts.call(ctx),
  });
  if (!outcome.done) return { ok: false, failure: failure(opts.job, outcome.by, outcome.problem) };
  return { ok: true, value: outcome.value };
}

export function secretValues(type: ConnectorKind, settings: Record<string, unknown>): string[] {
  return secretStrings(type.pointers.map((p) => getAt(settings, p)));
}

export function clipProblem(text: string): string {
  return clip(text, MAX_PROBLEM, '…');
}

export const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Plain JSON of a plugin's value (functions, cycles and the like dropped); null when it is not serialisable. */
export function jsonOnly(v: unknown): unknown {
  if (v === undefined) return null;
  try {
    return JSON.parse(JSON.stringify(v)) as unknown;
  } catch {
    return null;
  }
}
