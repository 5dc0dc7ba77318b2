import type { CauseDefinition, CheckAnswer, CheckContext, Remedy } from '../../../host/plugins/contract.ts';

const ID = 'prometheus/target-down';

/**
 * `prometheus/target-down`: Prometheus cannot scrape some of the service's targets (`up == 0`).
 * Reads `up` of the service's selectors (joined with `or`, so a target two links select counts
 * once) at the check's moment: holds when any target is at 0, ruled out when every target is at
 * 1, unknown when none has an `up` series. The evidence is that one query.
 */
export const targetDown: CauseDefinition = {
  id: ID,
  title: 'Scrape target down',
  specificity: 60,
  applies: { always: true },
  reads: ['metrics'],
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { describedAll, evidenceOf, listed, num, overAll, place, samplesObserved, seriesName } = ctx.lib.prometheus;
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;
    const where = describedAll(p);
    const answer = await ctx.metrics.query(overAll(p, (s) => `up{${s}}`));
    if (answer.samples.length === 0)
      return { verdict: 'unknown', obstacle: "the data isn't there", reason: `Prometheus has no up series for ${where}: no scrape target matches it` };
    const down = answer.samples.filter((s) => num(s.value) === 0);
    const targets = answer.samples.length;
    const shown = down.length > 0 ? down : answer.samples;
    const evidence = [
      evidenceOf(
        answer,
        'metric',
        samplesObserved(shown, { targets, down: down.length }),
        down.length > 0
          ? `${down.length} of ${targets} targets ${down.length === 1 ? 'is' : 'are'} down (up = 0): ${listed(down.map((s) => seriesName(s.metric)))}.`
          : `${targets === 1 ? 'The one target' : `All ${targets} targets`} ${targets === 1 ? 'is' : 'are'} up (up = 1).`,
      ),
    ];
    if (down.length > 0)
      return {
        verdict: 'holds',
        reason: `${down.length} of ${targets} scrape targets of ${where} ${down.length === 1 ? 'is' : 'are'} down (up = 0): ${listed(down.map((s) => seriesName(s.metric)))}`,
        evidence,
        subjects: down.map((s) => s.metric.instance ?? seriesName(s.metric)),
        ...restartRunbook(ctx.service),
        verification: { cause: ID, expect: 'ruled_out', after_s: 60 },
      };
    return {
      verdict: 'ruled_out',
      reason: `${targets === 1 ? 'the one scrape target' : `all ${targets} scrape targets`} of ${where} ${targets === 1 ? 'is' : 'are'} up (up = 1)`,
      evidence,
    };
  },
};

/** The remedy when the estate links the service to a runbook named `restart` (acting runs it through that link's connector). */
function restartRunbook(service: CheckContext['service']): { remedy?: Remedy } {
  return service.links.some((l) => l.kind === 'runbook' && l.name === 'restart')
    ? { remedy: { action: 'runbook', params: { name: 'restart' }, undo: 'a restart is not undone' } }
    : {};
}
