// A RabbitMQ node of a test's or the eval's own, beside the machine's (which runs as rabbit@localhost
// on 5672): its own node name, AMQP, distribution and Prometheus ports, data and log directories
// and Erlang cookie (in its own HOME), the rabbitmq_prometheus plugin on. Stopped and removed by
// its teardown. No test runtime in here.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startDaemon, type Teardowns } from './daemon.ts';
import { freePort } from './wait.ts';

/** Debian's scripts themselves (the /usr/sbin wrappers switch to the rabbitmq user and its cookie). */
export const RABBITMQ_SERVER = process.env.RABBITMQ_SERVER_BIN?.trim() || '/usr/lib/rabbitmq/bin/rabbitmq-server';
export const RABBITMQCTL = process.env.RABBITMQCTL_BIN?.trim() || '/usr/lib/rabbitmq/bin/rabbitmqctl';

export interface RunningRabbit {
  /** `amqp://guest:guest@127.0.0.1:<port>` (guest may sign in over loopback). */
  amqp: string;
  /** The plugin's scrape target, `127.0.0.1:<port>`. */
  metrics: string;
  node: string;
  /** A rabbitmqctl command against this node. */
  ctl(...args: string[]): Promise<string>;
}

/**
 * Starts the node and waits (90 s at most: a node boots in 5-30 s on a loaded machine) until its
 * Prometheus endpoint answers. `perObject` turns on per-queue series on /metrics
 * (`prometheus.return_per_object_metrics`); without it they are on /metrics/detailed only.
 */
export async function startRabbit(t: Teardowns, o: { perObject?: boolean; name?: string } = {}): Promise<RunningRabbit> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-rabbitmq-'));
  const home = path.join(dir, 'home');
  mkdirSync(home);
  const [amqpPort, distPort, promPort] = [await freePort(), await freePort(), await freePort()];
  const node = `${o.name ?? 'oncall-test'}-${path.basename(dir).slice(-6).toLowerCase()}@localhost`;
  writeFileSync(
    path.join(dir, 'rabbitmq.conf'),
    [
      `listeners.tcp.default = 127.0.0.1:${amqpPort}`,
      `prometheus.tcp.ip = 127.0.0.1`,
      `prometheus.tcp.port = ${promPort}`,
      `prometheus.return_per_object_metrics = ${o.perObject === true}`,
      '',
    ].join('\n'),
  );
  writeFileSync(path.join(dir, 'enabled_plugins'), '[rabbitmq_prometheus].\n');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    RABBITMQ_NODENAME: node,
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: path.join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: path.join(dir, 'log'),
    RABBITMQ_CONFIG_FILE: path.join(dir, 'rabbitmq.conf'),
    RABBITMQ_ENABLED_PLUGINS_FILE: path.join(dir, 'enabled_plugins'),
    RABBITMQ_PID_FILE: path.join(dir, 'rabbitmq.pid'),
  };
  const metrics = `127.0.0.1:${promPort}`;
  await startDaemon(t, {
    name: 'rabbitmq-server',
    bin: RABBITMQ_SERVER,
    args: [],
    dir,
    base: '',
    env,
    readyS: 90,
    ready: () =>
      fetch(`http://${metrics}/metrics`).then(
        (r) => r.ok,
        () => false,
      ),
  });
  const run = promisify(execFile);
  return {
    amqp: `amqp://guest:guest@127.0.0.1:${amqpPort}`,
    metrics,
    node,
    ctl: async (...args) => (await run(RABBITMQCTL, ['-n', node, ...args], { env })).stdout.trim(),
  };
}

/** The scrape of the plugin's per-queue families a test or the eval adds beside /metrics (see packs/rabbitmq/README.md). */
export const DETAILED = { path: '/metrics/detailed', params: { family: ['queue_coarse_metrics', 'queue_consumer_count', 'channel_queue_metrics'] } };
