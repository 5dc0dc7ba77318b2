/**
 * The fleet `bench:investigate` investigates: N services `svc-0 … svc-<N-1>`, each with a small
 * text-format exporter of its own (test/helpers/exporter.ts) that Debian's Prometheus scrapes
 * every second as job `svc-i` (test/helpers/prometheus.ts), and its estate entry (a workload
 * link `job="svc-i"` read through the `prom` connector, its health URL on its exporter). Services
 * are given one of ten profiles by `i % 10`, so that each cause of the shipped packs holds for
 * some services and is ruled out for the others; `expected` names the causes that must hold.
 */
import { waitFor } from '../helpers/wait.ts';
import type { Teardowns } from '../helpers/daemon.ts';
import { family, startExporter, type Exporter } from '../helpers/exporter.ts';
import { startPrometheus, type RunningPrometheus } from '../helpers/prometheus-server.ts';
import { cleanups } from './common.ts';
import { fileURLToPath } from 'node:url';
import { CauseCatalogue } from '../../host/investigation/catalogue.ts';
import { silentLogger } from '../../host/log.ts';
import { loadPlugins } from '../../host/plugins/loader.ts';

/** What is wrong with a service, by `i % 10`. */
export type Profile =
  'target-down' | 'error-rate' | 'latency' | 'disk-full' | 'memory-pressure' | 'restarted' | 'dependency' | 'healthy-datastore' | 'healthy-jvm' | 'healthy';

const PROFILES: readonly Profile[] = [
  'target-down',
  'error-rate',
  'latency',
  'disk-full',
  'memory-pressure',
  'restarted',
  'dependency',
  'healthy-datastore',
  'healthy-jvm',
  'healthy',
];

/** The alert each profile fires, and the causes that must hold for its episodes. */
const FIRES: Record<Profile, { alert: string; summary: string; technologies: string[]; expected: string[] }> = {
  'target-down': { alert: 'TargetDown', summary: 'a scrape target is down', technologies: [], expected: ['prometheus/target-down', 'http/endpoint-down'] },
  'error-rate': { alert: 'HighErrorRate', summary: '5xx share above 5 %', technologies: [], expected: ['prometheus/error-rate'] },
  latency: { alert: 'HighLatency', summary: 'p99 above 1 s', technologies: [], expected: ['prometheus/latency'] },
  'disk-full': {
    alert: 'NodeFilesystemAlmostOutOfSpace',
    summary: 'filesystem / has 2 % left',
    technologies: ['postgres'],
    expected: ['prometheus/disk-full'],
  },
  'memory-pressure': { alert: 'HostOutOfMemory', summary: 'memory available below 10 %', technologies: ['jvm'], expected: ['prometheus/memory-pressure'] },
  restarted: { alert: 'ProcessRestarted', summary: 'the process restarted', technologies: [], expected: ['prometheus/restarts'] },
  // Not expected: core/dependency-incident sees its dependency's episode only while that one is
  // still open when the investigation runs, and a wave closes its episodes within a second or so.
  dependency: { alert: 'HighErrorRate', summary: 'upstream failing', technologies: [], expected: [] },
  'healthy-datastore': { alert: 'HighLatency', summary: 'a false alarm', technologies: ['postgres'], expected: [] },
  'healthy-jvm': { alert: 'HostOutOfMemory', summary: 'a false alarm', technologies: ['jvm'], expected: [] },
  healthy: { alert: 'HighLatency', summary: 'a false alarm', technologies: [], expected: [] },
};

/**
 * BENCH_ALL_PACKS=1 (`--all-packs`): every service also names every technology a shipped pack
 * applies by, so that every cause of every pack runs on every episode (issue 26: "with every pack
 * loaded and applicable"). Those without series of their own answer unknown; none may hold.
 */
const ALL_PACKS = process.env.BENCH_ALL_PACKS === '1' || process.argv.includes('--all-packs');
const EVERY_TECHNOLOGY: string[] = ALL_PACKS
  ? [
      ...new Set(
        new CauseCatalogue(await loadPlugins({ dirs: [fileURLToPath(new URL('../../packs/', import.meta.url))], log: silentLogger() })).causes.flatMap((c) => [
          ...c.applies.technologies,
        ]),
      ),
    ]
  : [];

/** One service of the fleet. */
export interface FleetService {
  name: string;
  profile: Profile;
  exporter: Exporter;
  /** The alert name its waves fire. */
  alert: string;
  summary: string;
  technologies: string[];
  /** A service it depends on (the `dependency` profile: the target-down service of its ten). */
  dependsOn: string | null;
  /** The causes that must hold for each of its episodes. */
  expected: string[];
}

const GIB = 1024 ** 3;
const BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] as const;
/** Observations per scrape falling in each bucket of BUCKETS (then +Inf): fast (p99 ≈ 0.24 s) or slow (p99 ≈ 4.8 s). */
const FAST = [90, 8, 2, 0, 0, 0, 0, 0];
const SLOW = [10, 10, 20, 20, 20, 15, 5, 0];

/** The exporter's answer for one scrape of `s`, its `n`th: counters grow by a step per scrape. */
function metrics(s: { profile: Profile; startedAt: number }, n: number): string {
  const p = s.profile;
  const errors = p === 'error-rate' ? 25 : 1;
  const perBucket = p === 'latency' ? SLOW : FAST;
  let cumulative = 0;
  const buckets: Array<[Record<string, string>, number]> = [...BUCKETS.map((le) => String(le)), '+Inf'].map((le, i) => {
    cumulative += perBucket[i]!;
    return [{ le }, cumulative * n];
  });
  const observed = perBucket.reduce((a, b) => a + b, 0) * n;
  const fs = { device: '/dev/sda1', fstype: 'ext4', mountpoint: '/' };
  const size = 100 * GIB;
  const total = 16 * GIB;
  return [
    family('http_requests_total', 'counter', [
      [{ code: '200' }, 100 * n],
      [{ code: '500' }, errors * n],
    ]),
    family('http_request_duration_seconds', 'histogram', buckets, '_bucket') +
      `http_request_duration_seconds_sum ${(observed * (p === 'latency' ? 1.2 : 0.04)).toFixed(3)}\nhttp_request_duration_seconds_count ${observed}\n`,
    family('node_filesystem_size_bytes', 'gauge', [[fs, size]]),
    family('node_filesystem_avail_bytes', 'gauge', [[fs, p === 'disk-full' ? 0.02 * size : 0.4 * size]]),
    family('node_filesystem_readonly', 'gauge', [[fs, 0]]),
    family('node_memory_MemTotal_bytes', 'gauge', [[{}, total]]),
    family('node_memory_MemAvailable_bytes', 'gauge', [[{}, p === 'memory-pressure' ? 0.05 * total : 0.5 * total]]),
    family('process_start_time_seconds', 'gauge', [[{}, s.startedAt]]),
  ].join('');
}

/** The fleet running: its services, the Prometheus scraping them, and `stop()` (also run on any exit of the benchmark). */
export interface Fleet {
  services: FleetService[];
  prometheus: RunningPrometheus;
  stop(): Promise<void>;
}

/**
 * Starts `size` exporters and a Prometheus scraping each as its own job, and resolves once every
 * job has been scraped 3 times and Prometheus has stored it (polled: Prometheus scrapes on its
 * own wall-clock schedule). Everything is stopped by `stop()`, or by the benchmark's cleanup.
 */
export async function startFleet(size: number, log: (s: string) => void): Promise<Fleet> {
  const undo: Array<() => void | Promise<void>> = [];
  const teardowns: Teardowns = { teardown: (fn) => void undo.push(fn) };
  const stop = async () => {
    cleanups.delete(stop);
    while (undo.length > 0) await Promise.resolve(undo.pop()!()).catch(() => undefined);
  };
  cleanups.add(stop);
  try {
    const now = Date.now() / 1000;
    const services: FleetService[] = [];
    for (let i = 0; i < size; i++) {
      const profile = PROFILES[i % PROFILES.length]!;
      // Every process started a day before; a restarted one starts again at its third scrape
      // (before the waves: the fleet is ready after 3), so its start time changes inside the
      // window the cause reads. A start time first seen as it is would be a first start, not a restart.
      const state = { profile, startedAt: Math.round(now - 86_400), scrapes: 0 };
      const exporter = await startExporter(teardowns, () => {
        if (++state.scrapes === 3 && profile === 'restarted') state.startedAt = Math.round(Date.now() / 1000);
        return metrics(state, state.scrapes);
      });
      exporter.down = profile === 'target-down';
      const f = FIRES[profile];
      services.push({
        name: `svc-${i}`,
        profile,
        exporter,
        alert: f.alert,
        summary: f.summary,
        technologies: ALL_PACKS ? [...new Set([...f.technologies, ...EVERY_TECHNOLOGY])] : f.technologies,
        dependsOn: profile === 'dependency' ? `svc-${i - 6}` : null,
        expected: f.expected,
      });
    }
    const prometheus = await startPrometheus(teardowns, { jobs: services.map((s) => ({ job: s.name, targets: [s.exporter.target] })) });
    log(`Prometheus at ${prometheus.base} scraping ${size} exporters every second; waiting for 3 scrapes of each…`);
    await waitFor('3 scrapes of every exporter', async () => services.every((s) => s.exporter.scrapes.length >= 3), 60_000, 100);
    const stored = `count(count_over_time(up{job=~"svc-.+"}[1m]) >= 3)`;
    await waitFor(
      'Prometheus to store 3 scrapes of every job',
      async () => {
        const r = await fetch(`${prometheus.base}/api/v1/query?query=${encodeURIComponent(stored)}`);
        const body = (await r.json()) as { data?: { result?: Array<{ value: [number, string] }> } };
        return Number(body.data?.result?.[0]?.value[1] ?? 0) >= size;
      },
      60_000,
      200,
    ).catch((e: unknown) => {
      throw new Error(`${String(e)}\nprometheus output:\n${prometheus.output().slice(-3000)}`);
    });
    return { services, prometheus, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** The estate overrides document adding the fleet: each service with its workload link through `connector` and its health URL. */
export function estateOverrides(services: FleetService[], connector: string): { services: Record<string, unknown> } {
  return {
    services: Object.fromEntries(
      services.map((s) => [
        s.name,
        {
          owner: 'bench-team@bank.example',
          tier: 2,
          technologies: s.technologies,
          links: [{ kind: 'workload', match: `job="${s.name}"`, connector }],
          health_url: `http://${s.exporter.target}/health`,
          ...(s.dependsOn === null ? {} : { depends_on: [s.dependsOn] }),
        },
      ]),
    ),
  };
}
