import type { CheckContext, PackLibrary } from '../contract.ts';
import { PLUGIN_API_VERSION } from '../../version.ts';
import { describedAll, overAll, place } from './prometheus/place.ts';
import { bytes, durationSeconds, num, percent, promMatchers, quote, rounded, seconds } from './prometheus/promql.ts';
import { count, evidenceOf, labelsOf, listed, MAX_SERIES, samplesObserved, seriesName } from './prometheus/series.ts';
import { Settings } from './prometheus/settings.ts';
import { alertWindow } from './prometheus/window.ts';

/**
 * The pack library every check context carries as `ctx.lib` (plugin API 1.4): helpers packs share
 * instead of copying (PromQL building and placement by the estate's workload links, numbers in
 * words). Pure functions of their arguments; frozen, like everything else in the context.
 */
export const packLibrary: PackLibrary = Object.freeze({
  version: PLUGIN_API_VERSION,
  prometheus: Object.freeze({
    place,
    overAll,
    describedAll,
    quote,
    promMatchers,
    durationSeconds,
    alertWindow,
    settings: (ctx: CheckContext) => new Settings(ctx),
    num,
    percent,
    bytes,
    seconds,
    rounded,
    labelsOf,
    seriesName,
    listed,
    samplesObserved,
    evidenceOf,
    count,
    MAX_SERIES,
  }),
});
