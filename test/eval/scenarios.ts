/**
 * The eval's scenarios: each a service of its own with a fault injected for real, and what a
 * right diagnosis of it is. All run at once in one run; the harness injects every fault at the
 * same moment (T0) after a warm-up of healthy traffic.
 *
 * `expect` says: where the fault's alert must be placed, which causes may be the top one (none:
 * nothing may hold), which must hold beside it, which may hold (a true fact seen beside the
 * cause, such as the restart a deploy makes), and everything else **must not hold**. Optional:
 * the proposal (the revert of the bad commit), that the proposal was rehearsed successfully, and
 * words a verdict's reason must not use (a refused connection is no timeout; one target is one).
 */
import type { AppProcess, AppMode } from './app-process.ts';
import type { NodeHost } from './node-host.ts';
import type { Repo } from './repo.ts';
import type { ServersSpec } from './servers.ts';
import type { TlsEndpoint } from './tls-endpoint.ts';

/** A service of the eval's estate. */
export interface ServiceSpec {
  name: string;
  technologies: string[];
  /** A host with its own node_exporter and a /srv this full from the start. */
  host?: { used: number };
  /** A blackbox probe of its health URL, with a `service` label on the probe's target or without one. */
  probe?: 'labelled' | 'unlabelled';
  /** Its app's target carries `service="<name>"` as well, and the estate links both labels (two links, one target). */
  serviceLabel?: boolean;
  /** A repository of its own, linked without a path; else its folder of the platform repository. */
  ownRepo?: boolean;
  dependsOn?: string[];
  /** At L1 (autonomy.json): the action path rehearses what it proposes and asks for approval. */
  l1?: boolean;
  /** A TLS endpoint whose certificate the blackbox exporter reads (job `blackbox-tls`), `days` from its not-after at the start. */
  tls?: { days: number };
  /** nginx in front of its app, a Redis or a RabbitMQ node beside it (servers.ts). */
  servers?: ServersSpec;
}

/** What the scenarios may do to the world. */
export interface World {
  app(name: string): AppProcess;
  host(name: string): NodeHost;
  tls(name: string): TlsEndpoint;
  repoOf(name: string): Repo;
  /** The service's config file, as a path inside its repository. */
  configIn(name: string): string;
  healthUrl(name: string): string;
  /** Rewrites Prometheus's rule file and reloads it. */
  reloadRules(o: { watchdog: boolean }): Promise<void>;
  /** POST /v1/events with the ingest token, as a deploy pipeline or a person records a change. */
  recordEvent(body: Record<string, unknown>): Promise<void>;
  /** Facts a scenario learns while injecting (a commit's sha), for its expectations. */
  facts: Map<string, string>;
  /** Writes twice `bytes` into the service's Redis (servers.ts): past its maxmemory. */
  fillRedis(name: string, bytes: number): Promise<void>;
  /** Writes into the service's Redis until it uses `ratio` of its maxmemory, evicting nothing (servers.ts). */
  fillRedisTo(name: string, ratio: number): Promise<void>;
  /** Cancels the consumer of the service's queue while its publisher goes on (servers.ts). */
  stopConsumer(name: string): Promise<void>;
  /** A session of the service's PostgreSQL or MariaDB holds a row lock, its transaction left open, and two others wait on it (servers.ts). */
  holdLock(name: string): Promise<void>;
}

export interface ProposalWanted {
  action: string;
  params: Record<string, unknown>;
}

export interface Expect {
  placed: string;
  /** Causes any of which is a right top cause; null: nothing may hold. */
  top: string[] | null;
  alsoHold?: string[];
  mayHold?: string[];
  proposal?: ProposalWanted;
  /** The proposal was rehearsed and the rehearsal passed. */
  rehearsed?: boolean;
  reasonNot?: Array<{ cause: string; pattern: RegExp; why: string }>;
}

export interface Scenario {
  id: string;
  /** What is injected, in words, for the table. */
  injects: string;
  /** Its service; none for the heartbeat, which is the alerting pipeline's. */
  service: ServiceSpec | null;
  /** The alert that names the fault, and labels that tell it from the same alert of other services. */
  trigger: { alert: string; labels: (w: World) => Record<string, string> };
  inject(w: World): Promise<void>;
  /** A second fault once the episode is open: it must join that episode and be diagnosed in a re-run. */
  afterOpen?: { delayS: number; alert: string; labels: (w: World) => Record<string, string>; run(w: World): Promise<void> };
  expect(w: World): Expect;
  nearMiss?: boolean;
  /** Judged by the heartbeat rule instead of an episode of its own service. */
  heartbeat?: boolean;
}

const job = (name: string) => (): Record<string, string> => ({ job: name });
const hostOf = (name: string) => (w: World) => ({ instance: w.host(name).target });
const probeOf = (name: string) => (w: World) => ({ instance: w.healthUrl(name) });
const mode = (name: string, m: AppMode) => (w: World) => w.app(name).control(m);

/** A bad change: a commit that makes 25 % of requests fail, pushed and deployed (the app restarted on it). */
async function badCommit(w: World, name: string, subject: string): Promise<string> {
  const repo = w.repoOf(name);
  const sha = repo.commit({ [w.configIn(name)]: `${JSON.stringify({ error_ratio: 0.25 }, null, 2)}\n` }, subject, {
    name: 'Dana Developer',
    email: 'dana@bank.example',
  });
  w.facts.set(`${name}:sha`, sha);
  await w.app(name).restart();
  return sha;
}

/** A reason naming the same scrape target (`host:port`) twice. */
const ONE_TARGET_TWICE = /\b(\d+\.\d+\.\d+\.\d+:\d+)\b[\s\S]*\b\1\b/;

const revertOf = (w: World, name: string): ProposalWanted => ({ action: 'revert', params: { sha: w.facts.get(`${name}:sha`) ?? '(not committed)' } });

/** Extra services no scenario touches: dependencies that stay healthy. */
export const BYSTANDERS: ServiceSpec[] = [{ name: 'auth', technologies: ['nodejs'] }];

export const SCENARIOS: Scenario[] = [
  {
    id: 'disk-full',
    injects: '/srv of its host filled to 2 % free',
    service: { name: 'statements', technologies: ['postgres'], host: { used: 0.4 } },
    trigger: { alert: 'HostOutOfDiskSpace', labels: hostOf('statements') },
    inject: async (w) => w.host('statements').fill(0.02),
    expect: () => ({ placed: 'statements', top: ['prometheus/disk-full'] }),
  },
  {
    id: 'exporter-down',
    injects: "its host's node_exporter killed",
    service: { name: 'fx-rates', technologies: ['nodejs'], host: { used: 0.4 } },
    trigger: { alert: 'TargetDown', labels: hostOf('fx-rates') },
    inject: (w) => w.host('fx-rates').stop(),
    expect: () => ({ placed: 'fx-rates', top: ['prometheus/target-down'] }),
  },
  {
    id: 'endpoint-down',
    injects: 'the app stopped: health URL refused, labelled blackbox probe fails; target linked by job= and service=',
    service: { name: 'payments-gateway', technologies: ['nodejs'], probe: 'labelled', serviceLabel: true, dependsOn: ['auth'] },
    trigger: { alert: 'TargetDown', labels: job('payments-gateway') },
    inject: (w) => w.app('payments-gateway').stop(),
    expect: () => ({
      placed: 'payments-gateway',
      top: ['prometheus/target-down', 'http/endpoint-down'],
      alsoHold: ['prometheus/target-down', 'http/endpoint-down'],
      reasonNot: [
        { cause: 'http/endpoint-down', pattern: /timeout|no answer/i, why: 'a refused connection is worded as a timeout' },
        { cause: 'prometheus/target-down', pattern: ONE_TARGET_TWICE, why: 'one target counted twice (two links select it)' },
        { cause: 'prometheus/restarts', pattern: ONE_TARGET_TWICE, why: 'one target counted twice (two links select it)' },
      ],
    }),
  },
  {
    id: 'error-rate',
    injects: '7 % of requests answer 500 (the rule: > 5 % over 1m)',
    service: { name: 'checkout', technologies: ['nodejs'], dependsOn: ['auth'] },
    trigger: { alert: 'HighErrorRate', labels: job('checkout') },
    inject: mode('checkout', { error_ratio: 0.07 }),
    expect: () => ({ placed: 'checkout', top: ['prometheus/error-rate'] }),
  },
  {
    id: 'latency',
    injects: 'every request takes 2 s',
    service: { name: 'quotes', technologies: ['nodejs'] },
    trigger: { alert: 'HighLatencyP99', labels: job('quotes') },
    inject: mode('quotes', { latency_s: 2 }),
    expect: () => ({ placed: 'quotes', top: ['prometheus/latency'] }),
  },
  {
    id: 'crash-loop',
    injects: 'the process killed after 5 s up, restarted 3 s later, again and again',
    service: { name: 'settlement', technologies: ['nodejs'] },
    trigger: { alert: 'ProcessCrashLooping', labels: job('settlement') },
    inject: async (w) => w.app('settlement').crashLoop(5000, 3000),
    expect: () => ({ placed: 'settlement', top: ['prometheus/restarts'], mayHold: ['prometheus/target-down', 'http/endpoint-down'] }),
  },
  {
    id: 'change-deploy',
    injects: 'a commit making 25 % errors, deployed, with a human.deploy naming the commit (no pipeline)',
    service: { name: 'accounts', technologies: ['nodejs'], dependsOn: ['auth'], l1: true },
    trigger: { alert: 'HighErrorRate', labels: job('accounts') },
    inject: async (w) => {
      const sha = await badCommit(w, 'accounts', 'accounts: retry budget from the new config');
      // Recorded by the deploy script with the ingest token: a caller may not speak as a person
      // (an e-mail-shaped actor is refused, 400 reserved_actor).
      await w.recordEvent({
        type: 'human.deploy',
        actor: 'deploy-script',
        reason: 'deploy accounts 2.4.1',
        data: { service: 'accounts', version: '2.4.1', commit: sha, environment: 'production' },
      });
    },
    expect: (w) => ({
      placed: 'accounts',
      top: ['core/recent-change'],
      alsoHold: ['prometheus/error-rate'],
      mayHold: ['prometheus/restarts'],
      proposal: revertOf(w, 'accounts'),
      rehearsed: true,
    }),
  },
  {
    id: 'change-no-deploy',
    injects: 'a commit making 25 % errors, deployed without a deploy event; its own repository, linked without a path',
    service: { name: 'loans', technologies: ['nodejs'], dependsOn: ['auth'], ownRepo: true, l1: true },
    trigger: { alert: 'HighErrorRate', labels: job('loans') },
    inject: async (w) => {
      await badCommit(w, 'loans', 'Lower the connection pool to 2');
    },
    expect: (w) => ({
      placed: 'loans',
      top: ['core/recent-change'],
      alsoHold: ['prometheus/error-rate'],
      mayHold: ['prometheus/restarts'],
      proposal: revertOf(w, 'loans'),
      rehearsed: true,
    }),
  },
  {
    id: 'joining',
    injects: '20 % errors open an episode; 10 s after it opens, /srv of its host filled to 2 % free',
    service: { name: 'cards', technologies: ['nodejs'], host: { used: 0.4 }, dependsOn: ['auth'] },
    trigger: { alert: 'HighErrorRate', labels: job('cards') },
    inject: mode('cards', { error_ratio: 0.2 }),
    afterOpen: { delayS: 10, alert: 'HostOutOfDiskSpace', labels: hostOf('cards'), run: async (w) => w.host('cards').fill(0.02) },
    expect: () => ({ placed: 'cards', top: ['prometheus/disk-full'], alsoHold: ['prometheus/error-rate'] }),
  },
  {
    id: 'probe-unlabelled',
    injects: 'health URL answers 503; only a blackbox probe without a service label alerts',
    service: { name: 'web-portal', technologies: ['nodejs'], probe: 'unlabelled', dependsOn: ['auth'] },
    trigger: { alert: 'BlackboxProbeFailed', labels: probeOf('web-portal') },
    inject: mode('web-portal', { health_status: 503 }),
    expect: () => ({ placed: 'web-portal', top: ['http/endpoint-down'] }),
  },
  {
    id: 'control',
    injects: 'nothing: healthy, while a too-tight team rule (traffic > 2/s) fires',
    service: { name: 'catalog', technologies: ['nodejs'] },
    trigger: { alert: 'CatalogTrafficHigh', labels: job('catalog') },
    inject: async () => {},
    expect: () => ({ placed: 'catalog', top: null }),
  },
  {
    id: 'heartbeat',
    injects: 'the Watchdog rule removed, Prometheus reloaded (heartbeat timeout 60 s)',
    service: null,
    trigger: { alert: 'Watchdog', labels: () => ({}) },
    inject: (w) => w.reloadRules({ watchdog: false }),
    expect: () => ({ placed: '(any)', top: null }),
    heartbeat: true,
  },
  {
    id: 'near-error-rate',
    injects: '4 % of requests answer 500 (cause threshold 5 %; a > 1 % rule fires)',
    service: { name: 'transfers', technologies: ['nodejs'] },
    trigger: { alert: 'ErrorRateElevated', labels: job('transfers') },
    inject: mode('transfers', { error_ratio: 0.04 }),
    expect: () => ({ placed: 'transfers', top: null }),
    nearMiss: true,
  },
  {
    id: 'near-latency',
    injects: 'every request takes 0.8 s (cause threshold p99 1 s; a > 0.5 s rule fires)',
    service: { name: 'pricing', technologies: ['nodejs'] },
    trigger: { alert: 'HighLatencyP99', labels: job('pricing') },
    inject: mode('pricing', { latency_s: 0.8 }),
    expect: () => ({ placed: 'pricing', top: null }),
    nearMiss: true,
  },
  {
    id: 'near-disk',
    injects: '/srv at 6 % free since start, steady (cause threshold 5 %; a < 10 % rule fires)',
    service: { name: 'archive', technologies: ['postgres'], host: { used: 0.94 } },
    trigger: { alert: 'HostOutOfDiskSpace', labels: hostOf('archive') },
    inject: async () => {},
    expect: () => ({ placed: 'archive', top: null }),
    nearMiss: true,
  },
  {
    id: 'near-endpoint',
    injects: 'health answers 200 after 3 s (cause timeout 5 s; the 2 s blackbox probe fails)',
    service: { name: 'branch-locator', technologies: ['nodejs'], probe: 'labelled' },
    trigger: { alert: 'BlackboxProbeFailed', labels: probeOf('branch-locator') },
    inject: mode('branch-locator', { health_delay_s: 3 }),
    expect: () => ({ placed: 'branch-locator', top: null }),
    nearMiss: true,
  },
];

// ---------------------------------------------------------------------------------------------
// The host and blackbox packs (issue 26): a real fault for each, and a near miss.
// ---------------------------------------------------------------------------------------------
const tlsOf = (name: string) => (w: World) => ({ job: 'blackbox-tls', instance: w.tls(name).target });

SCENARIOS.push(
  {
    id: 'filesystem-readonly',
    injects: '/srv of its host remounted read-only (as ext4 does after an I/O error)',
    service: { name: 'ledger', technologies: ['postgres'], host: { used: 0.4 } },
    trigger: { alert: 'NodeFilesystemReadonly', labels: hostOf('ledger') },
    inject: async (w) => w.host('ledger').readOnly(),
    expect: () => ({ placed: 'ledger', top: ['host/filesystem-readonly'] }),
  },
  {
    id: 'certificate-expired',
    injects: 'its TLS endpoint starts presenting a certificate that expired a day ago',
    service: { name: 'online-banking', technologies: ['nodejs'], tls: { days: 90 } },
    trigger: { alert: 'BlackboxSslCertificateExpired', labels: tlsOf('online-banking') },
    inject: async (w) => w.tls('online-banking').present(-1),
    expect: () => ({ placed: 'online-banking', top: ['blackbox/certificate-expiry'] }),
  },
  {
    id: 'near-certificate',
    injects: 'a certificate with 17 days left since start (cause notice 14 days; a < 20 days rule fires)',
    service: { name: 'corporate-portal', technologies: ['nodejs'], tls: { days: 17 } },
    trigger: { alert: 'BlackboxSslCertificateWillExpireSoon', labels: tlsOf('corporate-portal') },
    inject: async () => {},
    expect: () => ({ placed: 'corporate-portal', top: null }),
    nearMiss: true,
  },
);

// ---------------------------------------------------------------------------------------------
// The web, redis and rabbitmq packs (issue 26, part C; servers.ts): a real fault for each, and a
// near miss of redis/memory-full.
// ---------------------------------------------------------------------------------------------

/** The maxmemory of the eval's Redis (`redis-maxmemory`). */
const REDIS_MAXMEMORY = 8 * 1024 * 1024;

SCENARIOS.push(
  {
    id: 'nginx-backend',
    injects: 'the one backend behind its nginx stopped (nginx answers 502)',
    service: { name: 'storefront', technologies: ['nginx', 'nodejs'], servers: { nginx: true } },
    trigger: { alert: 'TargetDown', labels: job('storefront-app') },
    inject: (w) => w.app('storefront').stop(),
    // The backend's own target is down and the health URL through nginx answers 502: true facts
    // beside the cause, which web/backend-down explains (target-down) or outranks.
    expect: () => ({ placed: 'storefront', top: ['web/backend-down'], mayHold: ['prometheus/target-down', 'http/endpoint-down'] }),
  },
  {
    id: 'redis-maxmemory',
    injects: 'its Redis (maxmemory 8 MB, allkeys-lru) written 16 MB: at maxmemory, keys evicted',
    service: { name: 'sessions', technologies: ['nodejs', 'redis'], servers: { redis: { maxmemory: '8mb' } } },
    trigger: { alert: 'RedisOutOfConfiguredMaxmemory', labels: job('sessions-redis') },
    inject: (w) => w.fillRedis('sessions', REDIS_MAXMEMORY),
    expect: () => ({ placed: 'sessions', top: ['redis/memory-full'] }),
  },
  {
    id: 'rabbitmq-no-consumer',
    injects: 'the consumer of its queue stopped while the app goes on publishing (5 messages/s)',
    service: { name: 'notifications', technologies: ['nodejs', 'rabbitmq'], servers: { rabbitmq: { queue: 'notifications.outbox' } } },
    trigger: { alert: 'RabbitmqNoConsumer', labels: job('notifications-mq') },
    inject: (w) => w.stopConsumer('notifications'),
    // The backlog grows too (by about 300 messages a minute, under the cause's 500 in 5m).
    expect: () => ({ placed: 'notifications', top: ['rabbitmq/no-consumers'], mayHold: ['rabbitmq/queue-backlog'] }),
  },
  {
    id: 'postgres-lock',
    injects: 'a batch session updates a row and leaves its transaction open; two of the app sessions wait on the row lock',
    service: { name: 'payments', technologies: ['nodejs', 'postgres'], servers: { postgres: true } },
    trigger: { alert: 'PostgresqlIdleInTransaction', labels: job('payments-pg') },
    inject: (w) => w.holdLock('payments'),
    expect: () => ({ placed: 'payments', top: ['postgres/blocking-session'], mayHold: ['postgres/long-transaction'] }),
  },
  {
    id: 'mariadb-lock-wait',
    injects: 'a transaction updates a row and stays open; two of the app transactions wait on the row lock (InnoDB)',
    service: { name: 'card-limits', technologies: ['nodejs', 'mariadb'], servers: { mariadb: true } },
    trigger: { alert: 'MysqlInnodbRowLockWaits', labels: job('card-limits-mysql') },
    inject: (w) => w.holdLock('card-limits'),
    expect: () => ({ placed: 'card-limits', top: ['mysql/lock-waits'] }),
  },
  {
    id: 'near-redis',
    injects: 'its Redis filled to 93 % of its maxmemory, nothing evicted (cause: at 90 % and evicting; a > 90 % rule fires)',
    service: { name: 'carts', technologies: ['nodejs', 'redis'], servers: { redis: { maxmemory: '8mb' } } },
    trigger: { alert: 'RedisOutOfConfiguredMaxmemory', labels: job('carts-redis') },
    inject: (w) => w.fillRedisTo('carts', 0.93),
    expect: () => ({ placed: 'carts', top: null }),
    nearMiss: true,
  },
);
