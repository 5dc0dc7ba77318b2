import type { CauseDefinition, CheckAnswer, CheckContext, EvidenceInput, Remedy } from '../../../host/plugins/contract.ts';
import { described, place } from '../lib/place.ts';
import { num } from '../lib/promql.ts';
import { evidenceOf, listed, readEach, samplesObserved, seriesName } from '../lib/series.ts';

const ID = 'prometheus/target-down';

/**
 * `prometheus/target-down`: Prometheus cannot scrape some of the service's targets (`up == 0`).
 * Reads `up{<selector>}` for each of the service's selectors at the check's moment: holds when
 * any target is at 0, ruled out when every target is at 1, unknown when none has an `up` series.
 */
export const targetDown: CauseDefinition = {
  id: ID,
  title: 'Scrape target down',
  specificity: 60,
  applies: { always: true },
  reads: ['metrics'],
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;
    const evidence: EvidenceInput[] = [];
    const downs: string[] = [];
    const empty: string[] = [];
    const seen: string[] = [];
    let targets = 0;
    for (const { selector, answer } of await readEach(ctx, p, (s) => `up{${s}}`)) {
      if (answer.samples.length === 0) {
        empty.push(described(p, selector));
        continue;
      }
      seen.push(described(p, selector));
      const down = answer.samples.filter((s) => num(s.value) === 0);
      targets += answer.samples.length;
      downs.push(...down.map((s) => seriesName(s.metric)));
      const shown = down.length > 0 ? down : answer.samples;
      evidence.push(
        evidenceOf(
          answer,
          'metric',
          samplesObserved(shown, { targets: answer.samples.length, down: down.length }),
          down.length > 0
            ? `${down.length} of ${answer.samples.length} targets of {${selector}} ${down.length === 1 ? 'is' : 'are'} down (up = 0): ${listed(down.map((s) => seriesName(s.metric)))}.`
            : `${answer.samples.length === 1 ? 'The one target' : `All ${answer.samples.length} targets`} of {${selector}} ${answer.samples.length === 1 ? 'is' : 'are'} up (up = 1).`,
        ),
      );
    }
    if (evidence.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `Prometheus has no up series for ${listed(empty)}: no scrape target matches it`,
      };
    const where = listed(seen);
    const also = empty.length > 0 ? `; no up series for ${listed(empty)}` : '';
    if (downs.length > 0)
      return {
        verdict: 'holds',
        reason: `${downs.length} of ${targets} scrape targets of ${where} ${downs.length === 1 ? 'is' : 'are'} down (up = 0): ${listed(downs)}${also}`,
        evidence,
        ...restartRunbook(ctx.service),
        verification: { cause: ID, expect: 'ruled_out', after_s: 60 },
      };
    return {
      verdict: 'ruled_out',
      reason: `${targets === 1 ? 'the one scrape target' : `all ${targets} scrape targets`} of ${where} ${targets === 1 ? 'is' : 'are'} up (up = 1)${also}`,
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
