import type { Logger } from '../log.ts';
import type { NotifyMessage } from '../plugins/contract.ts';
import { callable, callConnector, clipProblem } from './connector-calls.ts';
import type { ConnectorStore } from './connectors.store.ts';
import type { ConnectorKinds } from './kinds.ts';
import { cutOffMs } from './runner.ts';
import { clone, scrubText } from './secrets.ts';

/** Every configured connector whose kind can `notify`, with the fault that stops one being used (null when it can). */
export async function notifiable(store: ConnectorStore): Promise<Array<{ name: string; kind: string; fault: string | null }>> {
  return (await store.all())
    .filter((r) => r.type !== null && typeof r.type.plugin.notify === 'function')
    .map((r) => ({ name: r.name, kind: r.kind, fault: r.fault ?? (r.settings === null ? 'its settings are incomplete' : null) }));
}

/** Whether connectors of `kind` can be notification targets. */
export function canNotify(kinds: ConnectorKinds, kind: string): boolean {
  return typeof kinds.get(kind)?.plugin.notify === 'function';
}

/**
 * Delivers one notification through a configured connector, cut off as every call. Never
 * throws for the plugin's sake: a throw, a bad answer, the cut-off or a connector that is gone
 * or cannot notify is the problem, scrubbed of the connector's secrets.
 */
export async function notifyWith(
  d: { store: ConnectorStore; log: Logger },
  name: string,
  message: NotifyMessage,
): Promise<{ ok: boolean; problem: string | null; kind: string | null }> {
  const r = await d.store.resolve(name).catch(() => null);
  if (r === null) return { ok: false, problem: `no connector named ${name} is configured`, kind: null };
  const ready = callable(r, 'notification', (t) => typeof t.plugin.notify === 'function', `connectors of kind ${r.kind} cannot notify`);
  if (!ready.ok) return { ok: false, problem: clipProblem(ready.failure.problem), kind: r.kind };
  const { c } = ready;
  const outcome = await callConnector({
    job: 'notification',
    c,
    timeoutMs: cutOffMs(c.settings),
    log: d.log,
    call: (ctx) => (c.type.plugin.notify as (x: unknown, m: unknown) => unknown).call(c.type.plugin, ctx, clone(message)),
  });
  if (!outcome.ok) return { ok: false, problem: clipProblem(outcome.failure.problem), kind: r.kind };
  const v = outcome.value as { ok?: unknown; problem?: unknown } | null;
  if (typeof v !== 'object' || v === null || typeof v.ok !== 'boolean')
    return { ok: false, problem: 'the notification answered something that is not {ok, problem}', kind: r.kind };
  if (v.ok) return { ok: true, problem: null, kind: r.kind };
  return {
    ok: false,
    problem: clipProblem(scrubText(typeof v.problem === 'string' && v.problem !== '' ? v.problem : 'the notification failed without a reason', c.secrets)),
    kind: r.kind,
  };
}
