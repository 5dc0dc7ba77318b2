/**
 * The port a host process says it serves on, from its output (`Console and API on
 * http://localhost:<port>`, host/main.ts), or null while it has not said so yet.
 */
export function listeningPort(output: string): number | null {
  const m = /Console and API on http:\/\/[^:]+:(\d+)/.exec(output);
  return m === null ? null : Number(m[1]);
}
