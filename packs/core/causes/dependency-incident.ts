import type { CauseDefinition, CheckAnswer, CheckContext, EvidenceInput, RelatedEpisode } from '../../../host/plugins/contract.ts';
import { shownTime } from '../words.ts';

/** Episodes listed in the evidence (the count says how many there were). */
const MAX_LISTED = 20;

/**
 * `core/dependency-incident`: a service the estate says this one depends on has an episode open
 * (or had one open when this episode opened). The diagnosis then points at the dependency, so it
 * ranks above everything else; there is nothing to do to this service. See README.md.
 */
export const dependencyIncident: CauseDefinition = {
  id: 'core/dependency-incident',
  title: 'Incident in a dependency',
  specificity: 90,
  applies: { always: true },
  reads: ['episodes'],
  check,
};

function check(ctx: CheckContext): CheckAnswer {
  const { cut } = ctx.lib.text;
  const name = ctx.service.name;
  if (!ctx.service.in_estate)
    return {
      verdict: 'unknown',
      obstacle: "it can't be placed",
      reason: `${name} is not in the estate, so its dependencies are not known: add it to the estate with its depends_on.`,
    };
  const deps = ctx.service.depends_on;
  const estate: EvidenceInput = {
    source: 'estate',
    kind: 'dependencies',
    query: `depends_on of ${name} in the estate`,
    at: ctx.at,
    observed: { depends_on: deps },
    excerpt: deps.length === 0 ? `The estate lists no dependencies of ${name}.` : `${name} depends on ${deps.join(', ')}.`,
  };
  if (deps.length === 0)
    return { verdict: 'ruled_out', reason: `The estate lists no dependencies of ${name}, so none can have an incident.`, evidence: [estate] };

  const opened = Date.parse(ctx.episode.opened_at);
  // Open now, or open when this episode opened (a check re-run later still sees the overlap).
  const overlapping = (e: RelatedEpisode) => e.state === 'open' || (e.t_close !== null && Date.parse(e.t_open) <= opened && Date.parse(e.t_close) >= opened);
  // The earliest incident first: the likeliest origin of the others.
  const incidents = ctx.related.dependencies
    .filter((e) => deps.includes(e.service) && overlapping(e))
    .sort((a, b) => Date.parse(a.t_open) - Date.parse(b.t_open));
  const episodes: EvidenceInput = {
    source: 'episodes',
    kind: 'episodes',
    query: `episodes of ${deps.join(', ')} open at ${ctx.episode.opened_at}`,
    at: ctx.episode.opened_at,
    observed: {
      count: incidents.length,
      episodes: incidents.slice(0, MAX_LISTED).map((e) => ({
        id: e.id,
        service: e.service,
        state: e.state,
        t_open: e.t_open,
        t_close: e.t_close,
        alerts: e.alerts.slice(0, 10).map((a) => cut(a, 200)),
      })),
    },
    excerpt:
      incidents.length === 0
        ? `None of ${deps.join(', ')} has an episode open.`
        : incidents
            .slice(0, 5)
            .map((e) => `${e.service}: episode ${e.id} ${e.state === 'open' ? 'open' : 'was open'} since ${shownTime(e.t_open)}`)
            .join('; ') + '.',
  };
  const first = incidents[0];
  if (first === undefined)
    return { verdict: 'ruled_out', reason: `None of the dependencies of ${name} (${deps.join(', ')}) has an episode open.`, evidence: [estate, episodes] };
  const alerts =
    first.alerts.length === 0
      ? ''
      : `: ${first.alerts
          .slice(0, 3)
          .map((a) => cut(a, 80))
          .join(', ')}`;
  const others = incidents.length > 1 ? ` ${incidents.length - 1} more dependency episode${incidents.length > 2 ? 's are' : ' is'} open.` : '';
  return {
    verdict: 'holds',
    reason: `${name} depends on ${first.service}, ${when(first)} (${first.id}${alerts}).${others}`,
    evidence: [estate, episodes],
  };
}

/** When the dependency's episode was open, in words. */
function when(e: RelatedEpisode): string {
  return e.state === 'open' || e.t_close === null
    ? `which has had an episode open since ${shownTime(e.t_open)}`
    : `which had an episode open from ${shownTime(e.t_open)} to ${shownTime(e.t_close)}`;
}
