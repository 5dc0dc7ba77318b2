import type { CheckContext, PackLibrary, PluginLibrary } from '../contract.ts';
import { PLUGIN_API_VERSION } from '../../version.ts';
import { matches, parseMatchers } from '../../matchers.ts';
import { clip } from '../../text.ts';
import { connectionsCheck, counterCheck, upCheck } from './prometheus/causes.ts';
import { describedAll, overAll, place } from './prometheus/place.ts';
import { bytes, durationSeconds, num, percent, promMatchers, quote, rounded, seconds } from './prometheus/promql.ts';
import { count, evidenceOf, labelsOf, listed, MAX_SERIES, samplesObserved, seriesName } from './prometheus/series.ts';
import { Settings } from './prometheus/settings.ts';
import { alertWindow } from './prometheus/window.ts';

/**
 * The plugin library every connector call and check context carries as `ctx.lib` (plugin API
 * 1.6): the host's own text and label-matcher helpers, which plugins use instead of copying.
 * Pure functions of their arguments; frozen, like everything else in a context.
 */
export const pluginLibrary: PluginLibrary = Object.freeze({
  version: PLUGIN_API_VERSION,
  text: Object.freeze({ cut: (text: string, max: number) => clip(text, max, '…') }),
  matchers: Object.freeze({ parse: parseMatchers, matches }),
});

/**
 * The pack library (plugin API 1.4): the plugin library and the helpers packs share instead of
 * copying (PromQL building and placement by the estate's workload links, numbers in words), and
 * since 1.7 whole checks several packs' causes share (`upCheck`, `connectionsCheck`,
 * `counterCheck`). They only compute: what they read (`place`'s probe, a shared check's query)
 * goes through the cause's own `ctx.metrics`.
 */
export const packLibrary: PackLibrary = Object.freeze({
  ...pluginLibrary,
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
    upCheck,
    connectionsCheck,
    counterCheck,
  }),
});
