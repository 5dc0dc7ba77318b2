import bunyan from 'bunyan';
import type { Config } from './config.ts';

export type Logger = bunyan;

/**
 * Keys whose values never reach a log line, whatever object they sit in. Requests are logged
 * by our own hook (method, path without query, status), never with their headers or bodies.
 */
const SECRET_KEY = /(authorization|password|passwd|secret|token|api_?key|private_?key|cookie|code)$/i;

function scrub(value: unknown, depth = 0): unknown {
  if (depth > 6 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => scrub(v, depth + 1));
  if (value instanceof Error) return bunyan.stdSerializers.err(value);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEY.test(k) ? '[redacted]' : scrub(v, depth + 1);
  return out;
}

/** A request as a log line may show it: method and path, never headers, query or body. */
function safeReq(req: unknown): unknown {
  if (req === null || typeof req !== 'object') return undefined;
  const r = req as { method?: unknown; url?: unknown };
  const url = typeof r.url === 'string' ? r.url.split('?')[0] : undefined;
  return { method: typeof r.method === 'string' ? r.method : undefined, path: url };
}

function safeRes(res: unknown): unknown {
  if (res === null || typeof res !== 'object') return undefined;
  return { statusCode: (res as { statusCode?: unknown }).statusCode };
}

export function createLogger(config: Pick<Config, 'logLevel'>, stream?: NodeJS.WritableStream): Logger {
  return bunyan.createLogger({
    name: 'oncall',
    level: config.logLevel,
    streams: [{ level: config.logLevel, stream: stream ?? process.stdout }],
    serializers: { err: bunyan.stdSerializers.err, data: scrub, settings: scrub, req: safeReq, res: safeRes },
  });
}

/** A logger that drops everything, for CLI commands and tests that do not read logs. */
export function silentLogger(): Logger {
  return bunyan.createLogger({ name: 'oncall', streams: [{ level: 'fatal', stream: { write: () => true } as unknown as NodeJS.WritableStream }] });
}
