import type { InvestigatedEpisodes } from '../episodes/episodes.area.ts';
import type { Episode } from '../episodes/episode.model.ts';
import type { ServiceView } from '../estate/estate.model.ts';
import type { CheckService, RelatedEpisode } from '../plugins/contract.ts';
import type { CheckInputs } from './context.ts';

const DAY_MS = 24 * 3600 * 1000;

/** What the retrieval step reads of the estate. */
export interface EstateEntries {
  find(name: string): Promise<ServiceView | null>;
}

/** The service as a check sees it: its estate entry, or an empty one when the estate does not have it. */
export function checkService(name: string, view: ServiceView | null): CheckService {
  if (view === null) return { name, owner: null, team: null, tier: null, technologies: [], health_url: null, links: [], depends_on: [], in_estate: false };
  return {
    name,
    owner: view.owner,
    team: view.team,
    tier: view.tier,
    technologies: [...view.technologies],
    health_url: view.health_url,
    links: view.links.map((l) => ({
      kind: l.kind,
      certain: l.certain,
      ...(l.match === undefined ? {} : { match: l.match }),
      ...(l.connector === undefined ? {} : { connector: l.connector }),
      ...(l.path === undefined ? {} : { path: l.path }),
      ...(l.name === undefined ? {} : { name: l.name }),
    })),
    depends_on: view.depends_on.map((d) => d.service),
    in_estate: true,
  };
}

const related = (e: Episode): RelatedEpisode => ({
  id: e.id,
  service: e.service,
  state: e.state,
  t_open: e.t_open,
  t_close: e.t_close,
  alerts: e.alerts.slice(0, 20),
});

/**
 * Step 2 of the path (`retrieval.context`): the service's estate entry, the episode's signals and
 * the related episodes (its dependencies' open ones, its own of the last 7 days).
 */
export async function retrieve(
  d: { episodes: InvestigatedEpisodes; estate: EstateEntries },
  episode: Episode,
  nowMs: number,
): Promise<{ inputs: CheckInputs; view: ServiceView | null }> {
  const view = await d.estate.find(episode.service);
  const service = checkService(episode.service, view);
  const [signals, rel] = await Promise.all([
    d.episodes.signalsOf(episode.id),
    d.episodes.related(service.depends_on, episode.service, nowMs - 7 * DAY_MS, episode.id, episode.t_open_ms),
  ]);
  const { at, moment } = momentOf(episode.t_open, signals);
  return {
    view,
    inputs: {
      episode: { id: episode.id, service: episode.service, opened_at: episode.t_open },
      at,
      moment,
      signals: signals.map((s) => ({
        fingerprint: s.fingerprint,
        name: s.name,
        severity: s.severity === 'critical' || s.severity === 'info' ? s.severity : 'warning',
        status: s.end_status ?? 'firing',
        labels: s.labels,
        summary: s.summary,
        joined_at: s.joined_at,
        baseline: { ...s.baseline },
        starts_at: s.context?.starts_at ?? null,
        expression: s.context?.expression ?? null,
      })),
      service,
      related: { dependencies: rel.open.map(related), history: rel.history.map(related) },
      overrides: view?.check_settings ?? {},
    },
  };
}

/**
 * The moment a run reads: the episode's opening for its first run; once alerts joined later
 * (a re-run), the newest signal's arrival, so a disk that filled after the opening is seen.
 */
export function momentOf(openedAt: string, signals: ReadonlyArray<{ joined_at: string }>): { at: string; moment: 'opening' | 'newest_signal' } {
  const opened = Date.parse(openedAt);
  const newest = Math.max(opened, ...signals.map((s) => Date.parse(s.joined_at)).filter((t) => !Number.isNaN(t)));
  return newest > opened ? { at: new Date(newest).toISOString(), moment: 'newest_signal' } : { at: openedAt, moment: 'opening' };
}

/** The `retrieval.context` event's data: what was gathered, in counts and names (never the signals' labels). */
export function retrievalData(inputs: CheckInputs, run: number): Record<string, unknown> {
  const s = inputs.service;
  const links: Record<string, number> = {};
  for (const l of s.links) links[l.kind] = (links[l.kind] ?? 0) + 1;
  return {
    service: s.name,
    run,
    in_estate: s.in_estate,
    owner: s.owner,
    tier: s.tier,
    technologies: s.technologies.slice(0, 20),
    links,
    depends_on: s.depends_on.slice(0, 50),
    health_url: s.health_url !== null,
    signals: inputs.signals.length,
    at: inputs.at,
    moment: inputs.moment,
    related: {
      dependencies_open: inputs.related.dependencies.map((e) => ({ id: e.id, service: e.service })).slice(0, 20),
      history: inputs.related.history.length,
    },
  };
}
