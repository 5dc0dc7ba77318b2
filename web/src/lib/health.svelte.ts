import { api, settingsApi, type DoctorComponent, type EpisodeSummary, type NotifyStatus, type Connector } from './api.ts';

/**
 * What is broken right now, read from the API: the doctor's failing components, connectors with
 * a problem, recipients and targets whose last notification failed, and the open incidents.
 * Shared by the Home page (which shows it) and the header (which does not say "Running" while
 * anything here is broken). Read on every page change and every minute.
 */
export interface OpenIncidents {
  count: number;
  /** The worst severity of the firing alerts of the open incidents; null when none is open. */
  worst: 'critical' | 'warning' | 'info' | null;
  oldest: EpisodeSummary | null;
  /** More than were looked at (the count is then at least this). */
  more: boolean;
}

const RANK: Record<string, number> = { info: 0, warning: 1, critical: 2 };
const INCIDENTS_READ = 50;

const state = $state({
  loaded: false,
  failing: [] as DoctorComponent[],
  warnings: [] as DoctorComponent[],
  connectors: [] as Connector[],
  notify: null as NotifyStatus | null,
  incidents: null as OpenIncidents | null,
  problem: null as string | null,
});

async function incidents(): Promise<OpenIncidents> {
  const page = await api.episodes({ query: 'state:open', group: 'incident', limit: INCIDENTS_READ });
  const open = page.episodes;
  let worst = -1;
  for (const e of open) {
    const full = await api.episode(e.id);
    for (const s of full.signals) if (s.status === 'firing') worst = Math.max(worst, RANK[s.severity] ?? 1);
  }
  const oldest = open.length === 0 ? null : open.reduce((a, b) => (a.t_open <= b.t_open ? a : b));
  return { count: open.length, worst: worst < 0 ? null : worst === 2 ? 'critical' : worst === 1 ? 'warning' : 'info', oldest, more: page.more };
}

/** Each part is read on its own: one that cannot be read does not hide the others. */
export async function refreshHealth(): Promise<void> {
  const problems: string[] = [];
  const settle = async <T>(what: string, p: Promise<T>): Promise<T | null> => {
    try {
      return await p;
    } catch (e) {
      problems.push(`${what}: ${e instanceof Error ? e.message : String(e)}`);
      return null;
    }
  };
  const [doctor, connectors, notify, open] = await Promise.all([
    settle('doctor', settingsApi.doctor()),
    settle('connectors', settingsApi.connectors()),
    settle('notifications', settingsApi.notifications()),
    settle('incidents', incidents()),
  ]);
  state.failing = doctor?.components.filter((c) => c.status === 'fail') ?? [];
  state.warnings = doctor?.components.filter((c) => c.status === 'warn') ?? [];
  state.connectors = connectors?.connectors.filter((c) => c.state === 'problem') ?? [];
  state.notify = notify;
  state.incidents = open;
  state.problem = problems.length === 0 ? null : problems.join('; ');
  state.loaded = true;
}

export const health = {
  get loaded(): boolean {
    return state.loaded;
  },
  get failing(): DoctorComponent[] {
    return state.failing;
  },
  get warnings(): DoctorComponent[] {
    return state.warnings;
  },
  get connectors(): Connector[] {
    return state.connectors;
  },
  get notify(): NotifyStatus | null {
    return state.notify;
  },
  get incidents(): OpenIncidents | null {
    return state.incidents;
  },
  get problem(): string | null {
    return state.problem;
  },
  /** Something needs a person: a failing component, a connector or a notification target with a problem. */
  get broken(): boolean {
    return state.failing.length > 0 || state.connectors.length > 0 || (state.notify?.problems.length ?? 0) > 0;
  },
};
