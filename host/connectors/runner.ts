import type { Logger } from '../log.ts';
import type { ConnectorContext, LogFields, PluginLog } from '../plugins/contract.ts';
import { pluginHttp } from '../plugins/http-client.ts';
import { pluginLibrary } from '../plugins/lib/index.ts';
import { scrubJson, scrubText } from './secrets.ts';
import { clip } from '../text.ts';

/** The longest the host waits for any connector call. */
export const MAX_TIMEOUT_MS = 15_000;
/** The shortest cut-off a connector's `timeout_s` can ask for. */
export const MIN_TIMEOUT_MS = 100;

/**
 * The cut-off for one call: 15 s, or less when the settings carry a numeric top-level
 * `timeout_s` (the connector's own request timeout) below that; the host then waits one more
 * second, so the plugin's own timeout, with its clearer message, usually answers first.
 */
export function cutOffMs(settings: Record<string, unknown>): number {
  const t = settings.timeout_s;
  if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0) return MAX_TIMEOUT_MS;
  return Math.max(MIN_TIMEOUT_MS, Math.min(MAX_TIMEOUT_MS, Math.round(t * 1000) + 1000));
}

/** Why a guarded call gave no value: it threw (or rejected), or the host stopped waiting. */
export type Stopped = { done: false; by: 'threw' | 'cut_off'; problem: string };

export type Outcome<T> = { done: true; value: T } | Stopped;

/**
 * Runs one plugin call: never throws, never waits past `timeoutMs`. A throw, a rejection or the
 * cut-off becomes a problem (scrubbed of the secrets); the call's signal is aborted at the
 * cut-off so a well-behaved plugin stops its I/O.
 */
export async function runGuarded<T>(opts: {
  what: string;
  timeoutMs: number;
  log: Logger;
  secrets: string[];
  settings: Record<string, unknown>;
  call: (ctx: ConnectorContext) => Promise<T> | T;
}): Promise<Outcome<T>> {
  const { what, timeoutMs, secrets } = opts;
  const abort = new AbortController();
  const settings = Object.freeze(opts.settings);
  const ctx: ConnectorContext = {
    log: pluginLog(opts.log, secrets),
    settings,
    signal: abort.signal,
    timeoutMs,
    http: pluginHttp({ settings, signal: abort.signal, secrets }),
    lib: pluginLibrary,
  };
  let timer: NodeJS.Timeout | undefined;
  const cutOff = new Promise<Outcome<T>>((resolve) => {
    timer = setTimeout(() => {
      abort.abort(new Error(`timed out after ${timeoutMs / 1000} s`));
      resolve({ done: false, by: 'cut_off', problem: `no answer within ${timeoutMs / 1000} s (cut off)` });
    }, timeoutMs);
  });
  const attempt = (async (): Promise<Outcome<T>> => {
    try {
      return { done: true, value: await opts.call(ctx) };
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      return { done: false, by: 'threw', problem: `the ${what} failed: ${scrubText(firstLine(message), secrets)}` };
    }
  })();
  try {
    return await Promise.race([attempt, cutOff]);
  } finally {
    clearTimeout(timer);
    if (!abort.signal.aborted) abort.abort(new Error('the host no longer waits for this call'));
  }
}

function firstLine(text: string): string {
  const line = text.split('\n', 1)[0]!.trim();
  return clip(line, 500, '…');
}

/** The logger a plugin gets: tagged, its text and fields scrubbed of the connector's secrets. */
function pluginLog(log: Logger, secrets: string[]): PluginLog {
  const line = (level: 'info' | 'warn' | 'error') => (message: string, fields?: LogFields) => {
    try {
      log[level]({ plugin_fields: fields === undefined ? undefined : scrubJson(fields, secrets) }, scrubText(String(message), secrets));
    } catch {
      /* a plugin's odd fields never break the call */
    }
  };
  return { info: line('info'), warn: line('warn'), error: line('error') };
}
