import type { Metric, Registry } from 'prom-client';
import type { Sample } from './sources.ts';

/** How long one figure may take at scrape time; a slower one (a frozen database) is left out of that scrape. */
export const READ_TIMEOUT_MS = 3000;

interface MetricValues {
  name: string;
  help: string;
  type: string;
  aggregator: string;
  values: Array<{ labels: Record<string, string>; value: number }>;
}

/**
 * The figures read at a scrape, and those that failed: `oncall_metrics_read_failures_total`
 * waits for the scrape's reads, so a failure shows in the scrape it happened in.
 */
export class ScrapeReads {
  readonly #inflight = new Set<Promise<unknown>>();
  readonly #failures = new Map<string, number>();

  track<T>(read: Promise<T>): Promise<T> {
    this.#inflight.add(read);
    void read.catch(() => undefined).finally(() => this.#inflight.delete(read));
    return read;
  }

  failed(metric: string): void {
    this.#failures.set(metric, (this.#failures.get(metric) ?? 0) + 1);
  }

  register(registry: Registry): void {
    const metric = {
      name: 'oncall_metrics_read_failures_total',
      help: 'Figures that could not be read at a scrape (left out of it), by metric.',
      type: 'counter',
      aggregator: 'sum',
      get: async (): Promise<MetricValues> => {
        await Promise.allSettled([...this.#inflight]);
        return { ...metric, values: [...this.#failures].map(([m, value]) => ({ labels: { metric: m }, value })) };
      },
      reset: () => undefined,
    };
    registry.registerMetric(metric as unknown as Metric);
  }
}

/**
 * A gauge whose samples are read when Prometheus scrapes. A read that fails or times out leaves
 * the series out of that scrape (absent, never a made-up 0) and counts in
 * `oncall_metrics_read_failures_total{metric}`, so the rest of the scrape still answers.
 */
export class ReadGauge {
  readonly name: string;
  readonly help: string;
  readonly type = 'gauge';
  readonly aggregator = 'sum';
  readonly #read: () => Promise<Sample[]>;
  readonly #reads: ScrapeReads;

  constructor(o: { name: string; help: string; read: () => Promise<Sample[]> | Sample[]; reads: ScrapeReads }) {
    this.name = o.name;
    this.help = o.help;
    this.#read = async () => o.read();
    this.#reads = o.reads;
  }

  register(registry: Registry): void {
    registry.registerMetric(this as unknown as Metric);
  }

  get(): Promise<MetricValues> {
    return this.#reads.track(this.#get());
  }

  async #get(): Promise<MetricValues> {
    let values: MetricValues['values'] = [];
    let timer: NodeJS.Timeout | undefined;
    try {
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timed out')), READ_TIMEOUT_MS);
        timer.unref();
      });
      values = (await Promise.race([this.#read(), late])).map((s) => ({ labels: s.labels ?? {}, value: s.value }));
    } catch {
      this.#reads.failed(this.name);
    } finally {
      clearTimeout(timer);
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {}
}
