import type { Clock } from '../clock.ts';
import type { ConnectorReads } from '../investigation/live-readers.ts';

/** The least time between two reads the study makes of one connector. */
export const CONNECTOR_GAP_MS = 1000;

/**
 * The connectors' reads, paced for the study: a read of a connector waits until
 * CONNECTOR_GAP_MS after the previous read of that connector began (on the injected clock), so
 * the study never loads a connector harder than one request per second. Reads are made one at
 * a time (the study runs one cause at a time), so a map of last reads is enough.
 */
export function pacedReads(inner: ConnectorReads, d: { clock: Clock; wait: (ms: number) => Promise<void> }): ConnectorReads {
  const last = new Map<string, number>();
  return {
    readable: (capability) => inner.readable(capability),
    secretsOf: (name) => inner.secretsOf(name),
    read: async (name, method, request, maxMs) => {
      for (;;) {
        const prev = last.get(name);
        const left = prev === undefined ? 0 : prev + CONNECTOR_GAP_MS - d.clock.now().getTime();
        if (left <= 0) break;
        await d.wait(left);
      }
      last.set(name, d.clock.now().getTime());
      return inner.read(name, method, request, maxMs);
    },
  };
}
