import { Counter, Histogram, type Registry } from 'prom-client';
import type { CommittedEvent } from '../ledger/ledger.service.ts';

/** Action kinds and channels come from plugin manifests and the outbox; anything else is `other`, so label values stay a closed set. */
const LABEL = /^[a-z][a-z0-9_.:-]{0,63}$/;
const label = (v: unknown): string => (typeof v === 'string' && LABEL.test(v) ? v : 'other');

const ACTIONS: Record<string, string> = { 'action.executed': 'executed', 'action.failed': 'failed', 'action.refused': 'refused' };
const NOTIFICATIONS: Record<string, string> = {
  'outcome.notified': 'delivered',
  'outcome.notify_attempt_failed': 'attempt_failed',
  'outcome.notify_failed': 'gave_up',
};
/** Investigations this process started and has not seen end; bounded, since another host may finish one (hand-over). */
const TRACKED = 10_000;

/**
 * Counters of what this process's commits recorded, fed by the ledger's `onEvents`: actions by
 * kind and result, notification deliveries by channel and result, and how long investigations
 * took (from `retrieval.context`, their first step, to `decision.diagnosed` or
 * `decision.not_investigated`, on this process's own clock). Only those types are parsed.
 */
export function eventCounters(registry: Registry): (events: readonly CommittedEvent[]) => void {
  const actions = new Counter({
    name: 'oncall_actions_total',
    help: 'Actions taken on incidents by this host, by action kind and result (executed, failed, refused by the action gate).',
    labelNames: ['kind', 'result'],
    registers: [registry],
  });
  const notifications = new Counter({
    name: 'oncall_notifications_total',
    help: 'Notification outcomes recorded by this host, by channel (email, target) and result (delivered; attempt_failed: a message failing, on its first failure or a new reason; gave_up).',
    labelNames: ['channel', 'result'],
    registers: [registry],
  });
  const investigations = new Histogram({
    name: 'oncall_investigation_duration_seconds',
    help: 'How long investigations run by this host took, from gathering the context to the diagnosis.',
    buckets: [1, 5, 10, 30, 60, 120, 300, 600],
    registers: [registry],
  });
  const started = new Map<string, number>();

  return (events) => {
    for (const e of events) {
      const action = ACTIONS[e.type];
      const notification = NOTIFICATIONS[e.type];
      if (action !== undefined) {
        const data = JSON.parse(e.data) as { action?: unknown; kind?: unknown };
        actions.inc({ kind: label(e.type === 'action.refused' ? data.kind : data.action), result: action });
      } else if (notification !== undefined) {
        notifications.inc({ channel: label((JSON.parse(e.data) as { channel?: unknown }).channel), result: notification });
      } else if (e.type === 'retrieval.context' && e.trace !== null) {
        if (started.size >= TRACKED) started.delete(started.keys().next().value!);
        started.set(e.trace, performance.now());
      } else if ((e.type === 'decision.diagnosed' || e.type === 'decision.not_investigated') && e.trace !== null) {
        const at = started.get(e.trace);
        if (at !== undefined) {
          started.delete(e.trace);
          investigations.observe((performance.now() - at) / 1000);
        }
      }
    }
  };
}
