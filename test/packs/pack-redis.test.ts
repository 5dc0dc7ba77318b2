// The `redis` pack against Debian's redis-server and prometheus-redis-exporter, scraped every second
// by Debian's Prometheus: a master with a small maxmemory and maxclients and a replica of it, both
// the test's own on loopback ports; memory filled past maxmemory, connections past maxclients,
// the replica pointed at nothing, the master stopped, each for real.
import { existsSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { closedPort } from '../helpers/ports.ts';
import { testNeeding } from '../helpers/needs.ts';
import { check, rerun, service, untilPrometheus, workload } from '../helpers/pack-live.ts';
import { PROMETHEUS_BIN, startPrometheus } from '../helpers/prometheus.ts';
import { fill, monitoringAccount, REDIS_BIN, REDIS_CLI, REDIS_EXPORTER_BIN, startRedis, startRedisExporter } from '../helpers/redis.ts';

const missing = (
  [
    [PROMETHEUS_BIN, 'prometheus'],
    [REDIS_BIN, 'redis-server'],
    [REDIS_CLI, 'redis-tools'],
    [REDIS_EXPORTER_BIN, 'prometheus-redis-exporter'],
  ] as const
).find(([bin]) => !existsSync(bin));

testNeeding(
  missing === undefined ? null : `${missing[0]} not found (apt-get install ${missing[1]})`,
  'redis: each cause ruled out on a healthy master and replica, then holds on the fault made for it (maxmemory, maxclients, a replica cut off, the master stopped)',
  async (t) => {
    const master = await startRedis(t, { maxmemory: '4mb', policy: 'allkeys-lru', maxclients: 8 });
    const replica = await startRedis(t, { replicaOf: master.address });
    // The exporters sign in with the monitoring account the README documents, and nothing more.
    const account = { user: 'oncall-exporter', password: 'exporter-test-password-41c9' };
    await Promise.all([monitoringAccount(master, account.user, account.password), monitoringAccount(replica, account.user, account.password)]);
    const [mx, rx] = await Promise.all([startRedisExporter(t, master.address, { account }), startRedisExporter(t, replica.address, { account })]);
    const prom = await startPrometheus(t, { jobs: [{ job: 'cache', targets: [mx, rx] }] });
    const cache = service('cache', [workload('job="cache"')], { technologies: ['redis'] });
    await untilPrometheus(prom.base, 'redis_master_link_up{job="cache"}', (s) => s[0]?.value === 1, 60_000);
    await untilPrometheus(prom.base, 'redis_up{job="cache"} == 1', (s) => s.length === 2, 60_000);
    await untilPrometheus(
      prom.base,
      'count_over_time(redis_evicted_keys_total{job="cache"}[1m])',
      (s) => s.length === 2 && s.every((x) => x.value >= 2),
      60_000,
    );

    for (const id of ['redis/down', 'redis/memory-full', 'redis/rejected-connections', 'redis/replication-broken']) {
      const v = await check(prom.base, id, cache);
      t.is(v.verdict, 'ruled_out', `${id}: ${v.reason}`);
    }
    t.is(await master.cli('ACL', 'LOG'), '', 'the monitoring account was refused nothing');

    // The replica pointed at a port nothing listens on: its link stays down.
    await replica.cli('REPLICAOF', '127.0.0.1', String(await closedPort()));
    await untilPrometheus(prom.base, 'redis_master_link_up{job="cache"}', (s) => s[0]?.value === 0, 60_000);
    const brief = await check(prom.base, 'redis/replication-broken', cache);
    t.is(brief.verdict, 'ruled_out', `near miss: down for seconds, not the default minute: ${brief.reason}`);
    await untilPrometheus(
      prom.base,
      'max without (master_host, master_port) (max_over_time(redis_master_link_up{job="cache"}[5s]))',
      (s) => s[0]?.value === 0,
      60_000,
    );
    const cut = await check(prom.base, 'redis/replication-broken', cache, { settings: { down_for: '5s' } });
    t.is(cut.verdict, 'holds', cut.reason);
    t.deepEqual(cut.subjects, [rx]);

    // Past maxmemory: an allkeys-lru Redis evicts to stay under it.
    await fill(master, 400, 20_000);
    await untilPrometheus(prom.base, `redis_evicted_keys_total{instance="${mx}"}`, (s) => (s[0]?.value ?? 0) > 0, 60_000);
    await untilPrometheus(prom.base, `increase(redis_evicted_keys_total{instance="${mx}"}[5m])`, (s) => (s[0]?.value ?? 0) >= 1, 60_000);
    const full = await check(prom.base, 'redis/memory-full', cache);
    t.is(full.verdict, 'holds', full.reason);
    t.regex(full.reason, new RegExp(`${mx.replace(/\./g, '\\.')} at \\d+\\.\\d % of maxmemory, \\d+ keys evicted`));
    t.deepEqual(full.subjects, [mx]);
    for (const e of full.evidence) t.true((await rerun(prom.base, e.query, e.at)).length > 0, `${e.query} re-runs`);

    // Past maxclients (8, the replica's link among them): refusals. Released before the exporter's
    // next scrape, which needs a connection too.
    const held: Socket[] = [];
    for (let i = 0; i < 10; i++) held.push(connect(master.port, '127.0.0.1').on('error', () => undefined));
    t.teardown(() => held.forEach((s) => s.destroy()));
    await new Promise((r) => setTimeout(r, 300));
    held.forEach((s) => s.destroy());
    await untilPrometheus(prom.base, `increase(redis_rejected_connections_total{instance="${mx}"}[5m])`, (s) => (s[0]?.value ?? 0) >= 1, 60_000);
    const refused = await check(prom.base, 'redis/rejected-connections', cache);
    t.is(refused.verdict, 'holds', refused.reason);
    t.regex(refused.reason, /rejected connections in the last 5m, having maxclients clients/);

    // The master stopped as a crash stops it: its exporter answers redis_up 0.
    process.kill(master.pid!, 'SIGKILL');
    await untilPrometheus(prom.base, `redis_up{instance="${mx}"}`, (s) => s[0]?.value === 0, 60_000);
    const gone = await check(prom.base, 'redis/down', cache);
    t.is(gone.verdict, 'holds', gone.reason);
    t.regex(gone.reason, new RegExp(`1 of 2 Redis of .* cannot be reached by its exporter \\(redis_up = 0\\): ${mx.replace(/\./g, '\\.')}`));
  },
);

testNeeding(
  missing === undefined ? null : `${missing[0]} not found`,
  'redis/memory-full: a noeviction Redis at maxmemory refusing writes holds; one without maxmemory is ruled out',
  async (t) => {
    const strict = await startRedis(t, { maxmemory: '4mb', policy: 'noeviction' });
    const free = await startRedis(t);
    const [sx, fx] = await Promise.all([startRedisExporter(t, strict.address), startRedisExporter(t, free.address)]);
    const prom = await startPrometheus(t, {
      jobs: [
        { job: 'strict', targets: [sx] },
        { job: 'free', targets: [fx] },
      ],
    });
    await untilPrometheus(prom.base, 'redis_up == 1', (s) => s.length === 2, 60_000);
    t.regex(await fill(strict, 400, 20_000), /OOM/);
    // The application goes on writing, and is refused each time (the series of OOM errors appears
    // with the first refusal: increase() counts from its second sample on).
    await untilPrometheus(
      prom.base,
      `increase(redis_errors_total{job="strict",err="OOM"}[5m])`,
      async (s) => {
        await strict.cli('SET', 'more', 'x'.repeat(10_000)).catch(() => undefined);
        return (s[0]?.value ?? 0) >= 1;
      },
      60_000,
    );
    const refusing = await check(prom.base, 'redis/memory-full', service('strict', [workload('job="strict"')], { technologies: ['redis'] }));
    t.is(refusing.verdict, 'holds', refusing.reason);
    t.regex(refusing.reason, /writes refused \(OOM\)/);
    await fill(free, 400, 20_000);
    const unlimited = await check(prom.base, 'redis/memory-full', service('free', [workload('job="free"')], { technologies: ['redis'] }));
    t.is(unlimited.verdict, 'ruled_out', unlimited.reason);
    t.regex(unlimited.reason, /has a maxmemory/);
  },
);
