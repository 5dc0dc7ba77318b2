import type { Logger } from '../log.ts';
import type { ReadCapability } from '../plugins/contract.ts';
import { callable, callConnector, clipProblem, isObj, jsonOnly } from './connector-calls.ts';
import type { ConnectorStore } from './connectors.store.ts';
import type { KindRead } from './kinds.ts';
import { cutOffMs } from './runner.ts';
import { clone, scrubJson } from './secrets.ts';

/** The connector methods a check's readers call: each read-only (`read`: any declared capability, plugin API 1.5). */
export type ReadMethod = 'query' | 'range' | 'changes' | 'read';

/** A connector that serves a check capability (its kind declares it in `reads`). */
export interface ReadableConnector {
  name: string;
  kind: string;
  /** What stops it being read (a configuration fault, incomplete settings), or null. */
  fault: string | null;
}

/** What one read answered: `data` (query, range) or `commits` (changes), scrubbed of the connector's secrets. */
export type ReadReport = { ok: true; value: Record<string, unknown> } | { ok: false; problem: string };

const MAX_READ_BYTES = 1024 * 1024;

/** The configured connectors whose kind declares `capability` in its `reads` (manifest, or the export's array before plugin API 1.5). */
export async function readableFor(store: Pick<ConnectorStore, 'all'>, capability: ReadCapability): Promise<ReadableConnector[]> {
  return (await store.all())
    .filter((r) => r.type !== null && r.type.reads.has(capability))
    .map((r) => ({ name: r.name, kind: r.kind, fault: r.fault ?? (r.settings === null ? 'its settings are incomplete' : null) }));
}

/**
 * One read for a check (host/investigation): calls the connector's read-only `query`, `range` or
 * `changes`, guarded and cut off at its timeout (or the check's own deadline, when sooner). Never
 * throws; a plugin's `{ok: false, problem}`, a throw, the cut-off or an answer over 1 MiB is a
 * problem in words, scrubbed of the connector's secrets. Reads are not recorded one by one in the
 * ledger: the investigation records each check with a digest of its evidence.
 */
export async function readWith(
  d: { store: Pick<ConnectorStore, 'resolve'>; log: Logger },
  name: string,
  method: ReadMethod,
  request: Record<string, unknown>,
  maxMs: number,
): Promise<ReadReport> {
  const r = await d.store.resolve(name);
  const ready = callable(r, 'read', (t) => typeof t.plugin[method] === 'function', `connectors of kind ${r.kind} cannot answer ${method}`);
  if (!ready.ok) return { ok: false, problem: clipProblem(ready.failure.problem) };
  const { c } = ready;
  const declared = method === 'read' ? checkRead(c.type.reads, request) : null;
  if (declared !== null && !declared.ok) return { ok: false, problem: clipProblem(declared.problem) };
  const outcome = await callConnector({
    job: 'read',
    c,
    timeoutMs: Math.max(1, Math.min(cutOffMs(c.settings), maxMs)),
    log: d.log,
    call: (ctx) => (c.type.plugin[method] as (x: unknown, q: unknown) => unknown).call(c.type.plugin, ctx, clone(request)),
  });
  if (!outcome.ok) return { ok: false, problem: clipProblem(outcome.failure.problem) };
  const v = outcome.value;
  if (!isObj(v) || typeof v.ok !== 'boolean') return { ok: false, problem: `the connector answered something that is not {ok, problem, ...}` };
  if (!v.ok) return { ok: false, problem: clipProblem(scrubJson(typeof v.problem === 'string' ? v.problem : 'it gave no reason', c.secrets) as string) };
  const value = scrubJson(jsonOnly(v), c.secrets) as Record<string, unknown>;
  if (JSON.stringify(value).length > MAX_READ_BYTES) return { ok: false, problem: `the answer is larger than ${MAX_READ_BYTES / 1024} KiB; narrow the query` };
  if (declared !== null && declared.ok) {
    const bad = declared.read.validateAnswer(value.answer);
    if (bad !== null)
      return { ok: false, problem: clipProblem(`the connector answered something its ${String(request.capability)} declaration does not allow: ${bad}`) };
  }
  return { ok: true, value };
}

/**
 * A generic read (`read`, plugin API 1.5) before it reaches the connector: the kind declares the
 * capability, the check's request fits its `request` schema, and for a capability with `named`
 * the request names a declaration of the reading pack (`declared`) that fits the `named` schema.
 */
function checkRead(reads: ReadonlyMap<string, KindRead>, request: Record<string, unknown>): { ok: true; read: KindRead } | { ok: false; problem: string } {
  const cap = String(request.capability);
  const read = reads.get(cap);
  if (read === undefined) return { ok: false, problem: `connectors of this kind do not read ${cap.slice(0, 40)}` };
  const bad = read.validateRequest(request.request);
  if (bad !== null) return { ok: false, problem: `the check asked ${cap} something its declaration does not allow: ${bad}` };
  if (read.validateNamed !== null) {
    const d = request.declared as { pack?: unknown; name?: unknown; value?: unknown } | undefined;
    if (d === undefined) return { ok: false, problem: `${cap} reads only what a pack declares: the request names no declaration of the pack` };
    const wrong = read.validateNamed(d.value);
    if (wrong !== null)
      return { ok: false, problem: `the declaration ${String(d.pack)}/${String(d.name)} of ${cap} is not one this connector takes: ${wrong}` };
  } else if (request.declared !== undefined) return { ok: false, problem: `${cap} takes no declarations` };
  return { ok: true, read };
}
