/**
 * The eval's servers in front of or beside a service's app (issue 26, part C): Debian's nginx with
 * prometheus-nginx-exporter proxying to the app, a Redis of the eval's own with
 * prometheus-redis-exporter, a RabbitMQ node of its own (per-object metrics on /metrics) with a
 * publisher and a consumer over AMQP. Each is linked to the service in the estate and scraped by
 * the eval's Prometheus; the faults are the scenarios' (a stopped nginx backend, Redis filled to
 * maxmemory, a queue left without its consumer).
 */
import amqp, { type Channel, type ChannelModel } from 'amqplib';
import type { Teardowns } from '../helpers/daemon.ts';
import { startRabbit, type RunningRabbit } from '../helpers/rabbitmq.ts';
import type pg from 'pg';
import type mysql from 'mysql2/promise';
import { startMariadb, startMysqldExporter, type RunningMariadb } from '../helpers/mariadb.ts';
import { startPostgres, startPostgresExporter, type RunningPostgres } from '../helpers/postgres.ts';
import { fill, startRedis, startRedisExporter, type RunningRedis } from '../helpers/redis.ts';
import { startNginx, startNginxExporter, type RunningNginx } from '../helpers/web-tier.ts';
import { onFreePort } from './ports.ts';

/** What runs beside a service's app. */
export interface ServersSpec {
  /** nginx in front of the app: the app is its one upstream server (linked as `backend`), its health URL is through nginx. */
  nginx?: true;
  /** A Redis the app uses, with this maxmemory (allkeys-lru). */
  redis?: { maxmemory: string };
  /** A RabbitMQ node with one queue the app publishes to and consumes from. */
  rabbitmq?: { queue: string };
  /** A PostgreSQL of its own (a private cluster) with its exporter and an sql connector `<name>-db`, and a table `accounts`. */
  postgres?: true;
  /** A MariaDB of its own (a private mariadbd) with its exporter and an sql connector `<name>-db`, and a table `bank.accounts`. */
  mariadb?: true;
}

/** A scrape job the eval's Prometheus adds for these servers. */
export interface ExtraJob {
  job: string;
  target: string;
}

interface Running {
  nginx?: RunningNginx & { exporter: string };
  redis?: RunningRedis & { exporter: string };
  rabbit?: RunningRabbit & { conn: ChannelModel; ch: Channel; consumer: string | null; queue: string; timer: NodeJS.Timeout };
  postgres?: RunningPostgres & { exporter: string };
  mariadb?: RunningMariadb & { exporter: string };
}

/** The sql connector of a service's PostgreSQL. */
export const dbConnector = (name: string): string => `${name}-db`;

/** The job an app is scraped under: its service's name, or `<name>-app` behind nginx (the nginx exporter takes the name). */
export const appJob = (name: string, s: ServersSpec | undefined): string => (s?.nginx === true ? `${name}-app` : name);

export class ServerPeers {
  readonly #t: Teardowns;
  readonly #running = new Map<string, Running>();

  constructor(t: Teardowns) {
    this.#t = t;
  }

  /** Starts every service's servers (once its app listens on `appTarget`). */
  async start(services: ReadonlyArray<{ name: string; servers?: ServersSpec }>, appTarget: (name: string) => string): Promise<void> {
    await Promise.all(services.filter((s) => s.servers !== undefined).map((s) => this.#start(s.name, s.servers!, appTarget(s.name))));
  }

  async #start(name: string, spec: ServersSpec, app: string): Promise<void> {
    const r: Running = {};
    this.#running.set(name, r);
    const t = this.#t;
    await Promise.all([
      (async () => {
        if (spec.nginx !== true) return;
        let nginx: RunningNginx | null = null;
        await onFreePort(async (port) => void (nginx = await startNginx(t, { upstreams: [app], port })));
        const exporter = await startNginxExporter(t, nginx!.statusUrl);
        r.nginx = { ...nginx!, exporter };
      })(),
      (async () => {
        if (spec.redis === undefined) return;
        let redis: RunningRedis | null = null;
        await onFreePort(async (port) => void (redis = await startRedis(t, { port, maxmemory: spec.redis!.maxmemory, policy: 'allkeys-lru' })));
        r.redis = { ...redis!, exporter: await startRedisExporter(t, redis!.address) };
      })(),
      (async () => {
        if (spec.rabbitmq === undefined) return;
        const rabbit = await startRabbit(t, { perObject: true, name: 'oncall-eval' });
        const conn = await amqp.connect(rabbit.amqp);
        t.teardown(() => conn.close().catch(() => undefined));
        const ch = await conn.createChannel();
        const queue = spec.rabbitmq.queue;
        await ch.assertQueue(queue);
        const { consumerTag } = await ch.consume(queue, (m) => m !== null && ch.ack(m));
        // The app's own traffic: a message every 200 ms, taken at once by its consumer.
        const timer = setInterval(() => ch.sendToQueue(queue, Buffer.from(JSON.stringify({ at: Date.now() }))), 200);
        t.teardown(() => clearInterval(timer));
        r.rabbit = { ...rabbit, conn, ch, consumer: consumerTag, queue, timer };
      })(),
      (async () => {
        if (spec.postgres !== true) return;
        const db = await startPostgres(t, { maxConnections: 50 });
        await db.sql('CREATE TABLE accounts (id int PRIMARY KEY, balance int)');
        await db.sql('INSERT INTO accounts SELECT g, 100 FROM generate_series(1, 10) AS g');
        r.postgres = { ...db, exporter: await startPostgresExporter(t, db) };
      })(),
      (async () => {
        if (spec.mariadb !== true) return;
        const db = await startMariadb(t, { maxConnections: 50 });
        await db.sql('CREATE DATABASE bank');
        await db.sql('CREATE TABLE bank.accounts (id int PRIMARY KEY, balance int) ENGINE=InnoDB');
        await db.sql('INSERT INTO bank.accounts VALUES (1, 100), (2, 100)');
        r.mariadb = { ...db, exporter: await startMysqldExporter(t, db) };
      })(),
    ]);
  }

  /** The scrape jobs of every server: `<name>` for nginx's exporter, `<name>-redis`, `<name>-mq`. */
  jobs(): ExtraJob[] {
    return [...this.#running].flatMap(([name, r]) => [
      ...(r.nginx === undefined ? [] : [{ job: name, target: r.nginx.exporter }]),
      ...(r.redis === undefined ? [] : [{ job: `${name}-redis`, target: r.redis.exporter }]),
      ...(r.rabbit === undefined ? [] : [{ job: `${name}-mq`, target: r.rabbit.metrics }]),
      ...(r.postgres === undefined ? [] : [{ job: `${name}-pg`, target: r.postgres.exporter }]),
      ...(r.mariadb === undefined ? [] : [{ job: `${name}-mysql`, target: r.mariadb.exporter }]),
    ]);
  }

  /** The sql connectors of the services' databases: `<name>-db`, signing in as the monitoring account. */
  connectors(): Array<{ name: string; kind: string; settings: Record<string, unknown> }> {
    return [...this.#running].flatMap(([name, r]) => [
      ...(r.postgres === undefined ? [] : [{ name: dbConnector(name), kind: 'postgres', settings: r.postgres.settings }]),
      ...(r.mariadb === undefined ? [] : [{ name: dbConnector(name), kind: 'mysql', settings: r.mariadb.settings }]),
    ]);
  }

  /** The estate's workload links of a service's servers, beside its app's. */
  links(name: string, connector: string): Array<Record<string, string>> {
    const r = this.#running.get(name);
    if (r === undefined) return [];
    return [
      ...(r.nginx === undefined ? [] : [{ kind: 'workload', name: 'backend', match: `job="${name}-app"`, connector }]),
      ...(r.redis === undefined ? [] : [{ kind: 'workload', match: `job="${name}-redis"`, connector }]),
      ...(r.rabbit === undefined ? [] : [{ kind: 'workload', match: `job="${name}-mq"`, connector }]),
      ...(r.postgres === undefined
        ? []
        : [
            { kind: 'workload', match: `job="${name}-pg"`, connector },
            { kind: 'database', name, connector: dbConnector(name) },
          ]),
      ...(r.mariadb === undefined
        ? []
        : [
            { kind: 'workload', match: `job="${name}-mysql"`, connector },
            { kind: 'database', name, connector: dbConnector(name) },
          ]),
    ];
  }

  /**
   * A batch job's session updates a row and leaves its transaction open (idle in transaction),
   * and two of the app's sessions then wait on that row's lock: the sessions stay so until the
   * run ends.
   */
  async holdLock(name: string): Promise<void> {
    const my = this.#running.get(name)?.mariadb;
    if (my !== undefined) {
      const holder: mysql.Connection = await my.session();
      await holder.query('START TRANSACTION');
      await holder.query('UPDATE bank.accounts SET balance = balance - 1 WHERE id = 1');
      for (const w of [await my.session(), await my.session()])
        void w.query('UPDATE bank.accounts SET balance = balance + 1 WHERE id = 1').catch(() => undefined);
      return;
    }
    const db = this.#running.get(name)?.postgres;
    if (db === undefined) throw new Error(`no PostgreSQL or MariaDB of ${name}`);
    const holder = await db.session();
    await holder.query("SET application_name = 'nightly-batch'");
    await holder.query('BEGIN');
    await holder.query('UPDATE accounts SET balance = balance - 1 WHERE id = 1');
    const waiters: pg.Client[] = [await db.session(), await db.session()];
    for (const w of waiters) {
      await w.query("SET application_name = 'transfers-api'");
      void w.query('UPDATE accounts SET balance = balance + 1 WHERE id = 1').catch(() => undefined);
    }
  }

  /** The service's health URL when a server stands in front of its app (through nginx), else null. */
  healthUrl(name: string): string | null {
    const n = this.#running.get(name)?.nginx;
    return n === undefined ? null : `http://${n.address}/health`;
  }

  /** Writes past the Redis's maxmemory (keys of 20 KB, twice its size): it evicts to stay under it. */
  async fillRedis(name: string, maxmemoryBytes: number): Promise<void> {
    const redis = this.#running.get(name)?.redis;
    if (redis === undefined) throw new Error(`no Redis of ${name}`);
    await fill(redis, Math.ceil((2 * maxmemoryBytes) / 20_000), 20_000, 'session:');
  }

  /**
   * Writes into the service's Redis, 10 keys of 10 KB at a time, until it uses `ratio` of its
   * maxmemory (INFO's used_memory / maxmemory): short of it, so nothing is evicted.
   */
  async fillRedisTo(name: string, ratio: number): Promise<void> {
    const redis = this.#running.get(name)?.redis;
    if (redis === undefined) throw new Error(`no Redis of ${name}`);
    const used = async (): Promise<number> => {
      const info = await redis.cli('INFO', 'memory');
      const field = (k: string) => Number(new RegExp(`^${k}:(\\d+)`, 'm').exec(info)?.[1] ?? NaN);
      return field('used_memory') / field('maxmemory');
    };
    for (let batch = 0; (await used()) < ratio; batch++) {
      if (batch > 2000) throw new Error(`${name}: Redis did not reach ${ratio} of its maxmemory`);
      await fill(redis, 10, 10_000, `cart:${batch}:`);
    }
  }

  /** The queue's consumer stops (a worker crashed), while the app goes on publishing. */
  async stopConsumer(name: string): Promise<void> {
    const rabbit = this.#running.get(name)?.rabbit;
    if (rabbit === undefined || rabbit.consumer === null) throw new Error(`no consumer of ${name}`);
    await rabbit.ch.cancel(rabbit.consumer);
    rabbit.consumer = null;
  }
}
