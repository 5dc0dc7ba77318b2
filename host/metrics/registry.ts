import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { Clock } from '../clock.ts';
import { VERSION } from '../version.ts';
import { eventCounters } from './event-counters.ts';
import { ReadGauge, ScrapeReads } from './read-gauge.ts';
import type { MetricSources, Sample } from './sources.ts';

const one = (value: number, labels?: Record<string, string>): Sample[] => [labels === undefined ? { value } : { labels, value }];
const TIERS = new Set([1, 2, 3, 4]);
/** Lease names as labels: the kind of work (`poll:<connector>` is `poll`), a closed set. */
const leaseKind = (name: string): string => {
  const kind = name.split(':')[0]!;
  return ['poll', 'connectors', 'study', 'digest'].includes(kind) ? kind : 'other';
};

/**
 * The service's own metrics (docs/operations.md lists them): Node's process metrics, the build,
 * readiness, requests, alerts taken in, the held set, episodes, investigations, actions,
 * approvals, notifications, the ledger, connectors and leases. Built only when metrics are on.
 */
export function buildRegistry(sources: MetricSources, clock: Clock): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const reads = new ScrapeReads();
  const gauge = (name: string, help: string, read: () => Promise<Sample[]> | Sample[]) => new ReadGauge({ name, help, read, reads }).register(registry);

  new Gauge({ name: 'oncall_build_info', help: 'The running version (always 1).', labelNames: ['version', 'node_version'], registers: [registry] }).set(
    { version: VERSION, node_version: process.version },
    1,
  );

  gauge('oncall_ready', 'Whether GET /health/ready answers 200 (1) or 503 (0).', async () => one((await sources.readiness()).ready ? 1 : 0));
  gauge('oncall_not_ready', 'Each reason readiness fails for now (1 per reason; none when ready).', async () =>
    (await sources.readiness()).reasons.map((reason) => ({ labels: { reason }, value: 1 })),
  );

  new Counter({
    name: 'oncall_alerts_received_total',
    help: 'Alerts taken in by this host, by source word (generic for words no normaliser claims), way in (push, poll) and result.',
    labelNames: ['source', 'via', 'result'],
    registers: [registry],
    collect() {
      this.reset();
      for (const t of sources.alertsTaken()) this.inc({ source: t.source, via: t.via, result: t.result }, t.count);
    },
  });

  gauge('oncall_held_alerts', 'Firing alerts in the held set (install-wide).', async () => one(await sources.heldFiring()));
  gauge('oncall_episodes_open', 'Open episodes by the tier of their service (none: no tier in the estate), install-wide.', async () => {
    const counts = new Map<string, number>();
    for (const service of await sources.openEpisodes()) {
      const tier = await sources.tierOf(service);
      const key = tier !== null && TIERS.has(tier) ? String(tier) : 'none';
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return [...counts].map(([tier, value]) => ({ labels: { tier }, value }));
  });
  gauge('oncall_investigations_running', 'Investigations under way (install-wide).', async () => one(await sources.investigationsRunning()));
  gauge('oncall_investigations_pending', 'Investigations asked for and not yet started (install-wide).', async () =>
    one(await sources.investigationsPending()),
  );
  gauge('oncall_approvals_pending', 'Approval requests waiting for a decision (install-wide).', async () => one(await sources.approvalsPending()));
  gauge('oncall_notification_queue_depth', 'Notifications waiting to be delivered or retried (install-wide).', async () =>
    one(await sources.notificationQueue()),
  );

  gauge('oncall_ledger_head_seq', 'The seq of the newest ledger event.', async () => one((await sources.ledgerHead()).seq));
  gauge('oncall_ledger_checkpoint_seq', 'The seq of the newest signed checkpoint (absent before the first).', async () => {
    const cp = await sources.lastCheckpoint();
    return cp === null ? [] : one(cp.seq);
  });
  gauge('oncall_ledger_checkpoint_age_seconds', 'Seconds since the newest signed checkpoint was written (absent before the first).', async () => {
    const cp = await sources.lastCheckpoint();
    return cp === null ? [] : one(Math.max(0, (clock.now().getTime() - Date.parse(cp.at)) / 1000));
  });
  gauge('oncall_ledger_verify_ok', 'Whether the last verify this host ran found the chain intact (absent until one ran).', () => {
    const v = sources.lastVerify();
    return v === null ? [] : one(v.ok ? 1 : 0);
  });
  gauge('oncall_ledger_verify_timestamp_seconds', 'When the last verify this host ran finished, Unix time (absent until one ran).', () => {
    const v = sources.lastVerify();
    return v === null ? [] : one(v.atMs / 1000);
  });

  gauge('oncall_connectors', 'Configured connectors by kind and the state of their last check (ok, problem, unchecked).', async () => {
    const counts = new Map<string, number>();
    for (const c of await sources.connectors()) {
      const key = `${c.kind}\u0000${c.state}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return [...counts].map(([key, value]) => {
      const [kind, state] = key.split('\u0000') as [string, string];
      return { labels: { kind, state }, value };
    });
  });
  gauge('oncall_leases_held', 'Leases of scheduled work this host holds now, by kind of work (poll, connectors, study, digest).', async () => {
    const counts = new Map<string, number>([
      ['poll', 0],
      ['connectors', 0],
      ['study', 0],
      ['digest', 0],
    ]);
    for (const name of await sources.leasesHeld()) counts.set(leaseKind(name), (counts.get(leaseKind(name)) ?? 0) + 1);
    return [...counts].map(([lease, value]) => ({ labels: { lease }, value }));
  });

  sources.onEvents(eventCounters(registry));
  // Last: it waits for the reads above, so their failures show in the same scrape.
  reads.register(registry);
  return registry;
}
