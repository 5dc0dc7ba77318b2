/**
 * One run of the eval: a fresh service (`node host/main.ts` on a new SQLite file or MariaDB
 * database, default settings) brought to `operating`, its connectors and estate set over the API,
 * the world started, a warm-up of healthy traffic, every fault injected at once (T0), the
 * episodes watched until every scenario has its answer or the deadline passes, and the judging.
 * Everything it started is stopped and removed whatever happens.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cleanups, type Engine } from '../bench/common.ts';
import { call, expect, makeOperating, withService } from '../bench/service.ts';
import { HEARTBEAT_TIMEOUT_S, heartbeatSettled, judgeHeartbeat, type HeartbeatRun } from './heartbeat.ts';
import { episodeOf, judge, settled, type Judged } from './judge.ts';
import { Observer, type EpisodeView } from './observe.ts';
import { BYSTANDERS, type Scenario } from './scenarios.ts';
import { Stack } from './stack.ts';
import { CONNECTORS, EvalWorld } from './world.ts';

/** Healthy traffic before the faults, so every series has a past (seconds). */
export const WARMUP_S = 45;
/** After T0, the longest a run waits for its answers (seconds). */
export const DEADLINE_S = 180;
const POLL_MS = 3000;

export interface RunResult {
  judged: Judged[];
  ledger: string;
  /** Every episode of the run as the service answered it last, for a look at the evidence. */
  episodes: EpisodeView[];
}

export async function oneRun(engine: Engine, serverUrl: string | null, scenarios: Scenario[], log: (s: string) => void): Promise<RunResult> {
  const admin = `eval-admin-${randomBytes(16).toString('hex')}`;
  const ingest = `eval-ingest-${randomBytes(16).toString('hex')}`;
  const stack = new Stack();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oncall-eval-'));
  stack.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // Ctrl-C: the processes die with the harness (bench/common.ts `running`); the files go too.
  const unwind = () => stack.unwind(log);
  cleanups.add(unwind);
  try {
    const services = [...BYSTANDERS, ...scenarios.flatMap((s) => (s.service === null ? [] : [s.service]))];
    const world = await EvalWorld.plan(stack, dir, services);
    const configDir = path.join(dir, 'config');
    mkdirSync(configDir);
    writeFileSync(path.join(configDir, 'autonomy.json'), JSON.stringify(world.autonomy()));
    const secrets = { adminToken: admin, ingestToken: ingest, secretKey: `eval-secret-key-${randomBytes(16).toString('hex')}` };
    const env = { SERVICE_CONFIG_DIR: configDir };
    return await withService(engine, serverUrl, 'eval', { ...secrets, profile: false, bootS: 90, env }, async ({ service }) => {
      const base = service.base;
      await makeOperating(base, admin);
      log('starting the apps, their hosts and the on-call chat…');
      const started = Date.now();
      await world.startServices();
      const hb = await configure(base, admin, world, false);
      log('starting the blackbox exporter, Alertmanager and Prometheus…');
      await world.startMonitoring({ base, token: ingest });
      await configure(base, admin, world, true);
      log(`warm-up: ${WARMUP_S} s of healthy traffic…`);
      await sleep(Math.max(0, started + WARMUP_S * 1000 - Date.now()));
      const o = new Observer({ base, adminToken: admin, alertmanager: world.alertmanager });
      await injectAndWatch(scenarios, world, o, hb, log);
      const arrivals = await o.arrivals();
      const judged = scenarios.map((s) => (s.heartbeat === true ? judgeHeartbeat(s, o, hb) : judge(s, world, o, arrivals)));
      const v = await o.ledgerVerifies();
      return { judged, ledger: v.ok ? `verifies (${v.checked} events)` : `DOES NOT VERIFY: ${JSON.stringify(v)}`, episodes: [...o.episodes.values()] };
    });
  } finally {
    cleanups.delete(unwind);
    await unwind();
  }
}

/**
 * What an operator sets, over the API: the connectors, the estate, who is told, the heartbeat's
 * timeout; then (`monitoring`), once Prometheus and Alertmanager run, their connectors.
 */
async function configure(base: string, admin: string, world: EvalWorld, monitoring: boolean): Promise<HeartbeatRun> {
  const hb: HeartbeatRun = { stoppedAt: null, settingProblem: null };
  const peers = new Set(['prometheus', 'alertmanager']);
  for (const c of world.connectors(monitoring).filter((x) => peers.has(x.kind) === monitoring))
    await expect(`connector ${c.name}`, 201, call(base, 'PUT', `/v1/connectors/${c.name}`, admin, { kind: c.kind, settings: c.settings }));
  if (monitoring) return hb;
  await expect('the estate', 200, call(base, 'PUT', '/v1/estate/overrides', admin, world.estate()));
  await expect('who is told', 200, call(base, 'PUT', '/v1/settings/notifications', admin, { targets: [CONNECTORS.chat] }));
  const set = await call(base, 'PUT', '/v1/settings/heartbeats', admin, { sources: { alertmanager: { timeout_s: HEARTBEAT_TIMEOUT_S } } });
  if (set.status !== 200 && set.status !== 201) hb.settingProblem = `PUT /v1/settings/heartbeats answered ${set.status} ${JSON.stringify(set.body)}`;
  return hb;
}

/** Every fault at once (T0), then the episodes read until each scenario has its answer or the deadline passes. */
async function injectAndWatch(scenarios: Scenario[], world: EvalWorld, o: Observer, hb: HeartbeatRun, log: (s: string) => void): Promise<void> {
  const t0 = Date.now();
  log(`T0: injecting ${scenarios.length} faults`);
  await Promise.all(
    scenarios.map(async (s) => {
      if (s.heartbeat === true) hb.stoppedAt = Date.now();
      await s.inject(world);
    }),
  );
  const later = new Set<string>();
  const deadline = t0 + DEADLINE_S * 1000;
  const done = (s: Scenario) => (s.heartbeat === true ? heartbeatSettled(o, hb) : settled(s, world, o));
  for (;;) {
    await o.poll().catch((e: unknown) => log(`read failed: ${(e as Error).message}`));
    for (const s of scenarios) {
      if (s.afterOpen === undefined || later.has(s.id) || episodeOf(s, world, o) === null) continue;
      later.add(s.id);
      const after = s.afterOpen;
      log(`${s.id}: episode open; in ${after.delayS} s: the second fault`);
      setTimeout(() => void after.run(world).catch((e: unknown) => log(`${s.id}: the second fault failed: ${(e as Error).message}`)), after.delayS * 1000);
    }
    const waiting = scenarios.filter((s) => !done(s)).map((s) => s.id);
    if (waiting.length === 0 || Date.now() > deadline) {
      log(waiting.length === 0 ? `all answered ${Math.round((Date.now() - t0) / 1000)} s after T0` : `deadline: still waiting for ${waiting.join(', ')}`);
      return;
    }
    await sleep(POLL_MS);
  }
}
