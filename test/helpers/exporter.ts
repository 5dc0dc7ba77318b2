import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Teardowns } from './daemon.ts';

/** A small Prometheus exporter run by a test: text-format metrics whose values the test changes. */
export interface Exporter {
  /** `127.0.0.1:<port>`, as a scrape target. */
  target: string;
  /** While true, scrapes are answered 503, so Prometheus records `up == 0`. */
  down: boolean;
  /** When each scrape was served (epoch ms), answered or refused. */
  scrapes: number[];
}

/**
 * Serves `/metrics` in the Prometheus text format (0.0.4) from `render()`, called once per
 * scrape, so counters can grow by a step per scrape. Closed after the test.
 */
export async function startExporter(t: Teardowns, render: () => string): Promise<Exporter> {
  const state: Exporter = { target: '', down: false, scrapes: [] };
  const server = createServer((req, res) => {
    state.scrapes.push(Date.now());
    if (state.down) {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('down for the test\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(render());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.target = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return state;
}

/** One metric family in the text format: `# TYPE` line and its samples. */
export function family(name: string, type: 'counter' | 'gauge' | 'histogram', samples: Array<[Record<string, string>, number]>, suffix = ''): string {
  const lines = samples.map(([labels, v]) => {
    const l = Object.entries(labels)
      .map(([k, x]) => `${k}="${x}"`)
      .join(',');
    return `${name}${suffix}${l === '' ? '' : `{${l}}`} ${Number.isFinite(v) ? String(v) : v > 0 ? '+Inf' : v < 0 ? '-Inf' : 'NaN'}`;
  });
  return `# TYPE ${name} ${type}\n${lines.join('\n')}\n`;
}
