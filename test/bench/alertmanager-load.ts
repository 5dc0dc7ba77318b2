/**
 * The intake load of `bench:intake` (test/bench/intake.ts), shared with `bench:investigate`:
 * Alertmanager v4 bodies out of a pool of fingerprints, and autocannon driving
 * `POST /v1/alerts/alertmanager` with them, every answer expected to be a 202.
 */
import type { Engine } from './common.ts';
import { autocannon, loadFigures, type LoadFigures } from './service.ts';

/** bench:intake's target for single-alert pushes (32 connections), per engine: pushes a second. */
export const SINGLE_PUSH_TARGET: Record<Engine, number> = { sqlite: 4_000, mysql: 1_500 };

/** One Alertmanager v4 alert; `n` picks its fingerprint (and labels) out of the pool, `service` names 20 services `<service>-0…19`. */
export function alert(prefix: string, n: number, service = 'svc') {
  const labels = {
    alertname: `BenchAlert${n % 50}`,
    instance: `node-${n}.bank.example:9100`,
    job: 'node',
    service: `${service}-${n % 20}`,
    severity: n % 10 === 0 ? 'critical' : 'warning',
  };
  return {
    status: 'firing',
    labels,
    annotations: { summary: `Benchmark alert ${n} on node-${n}`, description: 'intake benchmark' },
    startsAt: '2026-11-22T06:00:00.000Z',
    endsAt: '0001-01-01T00:00:00Z',
    generatorURL: `http://prometheus.bank.example:9090/graph?g0.expr=up%3D%3D0&n=${n}`,
    fingerprint: `${prefix}${n.toString(16).padStart(14, '0')}`,
  };
}

/** The webhook body Alertmanager would send for `alerts`, as JSON text. */
export function envelope(alerts: ReturnType<typeof alert>[]): string {
  const first = alerts[0]!;
  return JSON.stringify({
    receiver: 'oncall',
    status: 'firing',
    alerts,
    groupLabels: { alertname: first.labels.alertname },
    commonLabels: alerts.length === 1 ? first.labels : { job: 'node' },
    commonAnnotations: alerts.length === 1 ? first.annotations : {},
    externalURL: 'http://alertmanager.bank.example:9093',
    version: '4',
    groupKey: `{}:{alertname="${first.labels.alertname}"}`,
    truncatedAlerts: 0,
  });
}

/** A load phase's pushes and alerts, their rates and latencies. */
export type Phase = {
  pushes: number;
  alerts: number;
  seconds: number;
  pushes_per_s: number;
  alerts_per_s: number;
} & LoadFigures<'202'>;

/** A load running: `stop()` ends it early; `done` has its figures (over the time it really ran). */
export interface Pushing {
  stop(): void;
  done: Promise<Phase>;
}

/** Starts pushing `bodies` in turn (each of `perBody` alerts) from `connections` connections for at most `duration` s. */
export function startPushes(base: string, ingestToken: string, bodies: string[], perBody: number, connections: number, duration: number): Pushing {
  let next = 0;
  const instance = autocannon({
    url: `${base}/v1/alerts/alertmanager`,
    connections,
    duration,
    timeout: 10,
    requests: [
      {
        method: 'POST',
        headers: { authorization: `Bearer ${ingestToken}`, 'content-type': 'application/json' },
        setupRequest: (req) => ({ ...req, body: bodies[next++ % bodies.length]! }),
      },
    ],
  });
  const done = Promise.resolve(instance).then((result): Phase => {
    const figures = loadFigures(result, connections, '202');
    const pushes = figures.ok_202;
    return {
      pushes,
      alerts: pushes * perBody,
      seconds: result.duration,
      pushes_per_s: Math.round(pushes / result.duration),
      alerts_per_s: Math.round((pushes * perBody) / result.duration),
      ...figures,
    };
  });
  return { stop: () => instance.stop(), done };
}

/** Pushes `bodies` for `duration` s, then the figures. */
export function drive(base: string, ingestToken: string, bodies: string[], perBody: number, connections: number, duration: number): Promise<Phase> {
  return startPushes(base, ingestToken, bodies, perBody, connections, duration).done;
}
