import { hostname } from 'node:os';
import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { DiscoveryArea } from '../discovery/discovery.area.ts';
import type { EpisodesArea } from '../episodes/episodes.area.ts';
import type { Governance } from '../governance/governance.ts';
import type { HeldAlerts } from '../intake/held-alerts.ts';
import type { StudyArea } from '../study/study.area.ts';
import type { Poller } from '../schedule/poller.ts';
import { liveRoutes } from './live.routes.ts';
import { LiveService, type LiveInvestigation } from './live.service.ts';
import { TickMonitor } from './tick-monitor.ts';

export interface LiveArea extends Area {
  /** When the background tick last ran, and wraps its last step. */
  readonly ticks: TickMonitor;
}

/** GET /v1/live: what is under way right now, read from each area; nothing is stored. */
export function createLiveArea(d: {
  clock: Clock;
  debounceS: number;
  tickMs: number;
  held: Pick<HeldAlerts, 'ungroupedByService'>;
  episodes: Pick<EpisodesArea, 'open'>;
  governance: Pick<Governance, 'approvals'>;
  discovery: Pick<DiscoveryArea, 'running'>;
  poller: Pick<Poller, 'schedule'>;
  investigations: { running(limit: number): Promise<LiveInvestigation[]> };
  study?: Pick<StudyArea, 'running'>;
  /** Every lease held now (the schedule's `LeaseRepo.live`, on the lease clock). */
  leases?: () => Promise<Array<{ name: string; holder: string; until_ms: number }>>;
}): LiveArea {
  const ticks = new TickMonitor({ clock: d.clock, everyMs: d.tickMs });
  const live = new LiveService({
    clock: d.clock,
    debounceS: d.debounceS,
    ungrouped: () => d.held.ungroupedByService(),
    openEpisodes: (limit) => d.episodes.open(limit),
    pendingApprovals: async (limit) =>
      (await d.governance.approvals.list({ state: 'pending', limit })).map((a) => ({
        id: a.id,
        kind: a.kind,
        service: a.service,
        summary: a.summary,
        requested_by: a.requested_by,
        requested_at: a.requested_at,
        expires_at: a.expires_at,
      })),
    discoveryJobs: () => d.discovery.running(),
    polls: () => d.poller.schedule(),
    investigations: (limit) => d.investigations.running(limit),
    ...(d.study === undefined ? {} : { studies: () => d.study!.running() }),
    ...(d.leases === undefined
      ? {}
      : {
          leases: async () => {
            const here = `${hostname()}:${process.pid}:`;
            return (await d.leases!()).map((l) => ({
              name: l.name,
              holder: l.holder,
              until: new Date(l.until_ms).toISOString(),
              here: l.holder.startsWith(here),
            }));
          },
        }),
    tick: () => ticks.seen(),
  });
  return { ticks, routes: ({ server, log, guard }: Http) => liveRoutes(server, { log, guard, live }) };
}
