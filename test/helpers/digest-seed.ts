// A seeded day for the digest tests: three services acting at L1 through a fixer connector, one
// episode mitigated (then its action undone), one escalated after a rejection, one whose
// approved action the halt refuses (proposed again after the resume, at shadow by then); a halt
// and a resume, an autonomy change, a flapping alert no
// service claims (named like an HTML tag), and a connector with a problem. Everything goes
// through the service's own API and workers, on the injected clock.
import type { ExecutionContext } from 'ava';
import { MINUTE, SECOND, TestClock } from '../../host/clock.ts';
import { AutonomyRepo } from '../../host/governance/autonomy.repo.ts';
import { INGEST_TOKEN, makeOperating, startApp, type StartOptions, type TestApp } from './app.ts';
import { fixVendor } from './fix-vendor.ts';
import { signedIn } from './people.ts';
import { startSmtp, type TestSmtp } from './smtp.ts';

/** Where the seeded day starts (the digest is asked for at SEED_END). */
export const SEED_START = '2026-06-01T06:00:00.000Z';
export const HOSTILE_ALERT = '<img src=x onerror=alert(1)>';

function ok(r: { status: number; body: unknown }, what: string): void {
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
}

const SERVICES = ['jobs', 'batch', 'cron'] as const;
const stuck = (service: string, status = 'firing') => ({ name: 'WorkerStuck', service, severity: 'critical', status, id: `${service}-stuck` });

/** Starts an operating app with the fixer vendor on a clock at SEED_START, mailing through a test SMTP server. */
export async function seededApp(t: ExecutionContext, opts: StartOptions & { smtp?: TestSmtp } = {}): Promise<{ ta: TestApp; smtp: TestSmtp }> {
  const v = fixVendor(t);
  const smtp = opts.smtp ?? (await startSmtp(t));
  const ta = await startApp(t, {
    manualTick: true,
    ...opts,
    clock: opts.clock ?? new TestClock(SEED_START),
    env: { SERVICE_PLUGINS_DIR: v.dir, SERVICE_MAIL_CA_FILE: smtp.caFile, SERVICE_TIME_ZONE: 'Europe/Zurich', ...opts.env },
  });
  await makeOperating(ta);
  ok(await ta.call('PUT', '/v1/settings/mail', { body: { smtp_host: smtp.host, smtp_port: smtp.port, mail_from: 'oncall-service@bank.example' } }), 'mail');
  await signedIn(ta, 'approver@bank.example', 'viewer');
  await signedIn(ta, 'admin@bank.example', 'admin');
  await signedIn(ta, 'viewer@bank.example', 'viewer');
  ok(await ta.call('PUT', '/v1/connectors/fix', { body: { kind: 'fixer', settings: { log: v.log } } }), 'connector fix');
  ok(await ta.call('PUT', '/v1/connectors/broken', { body: { kind: 'fixer', settings: { log: `${v.log}.broken` } } }), 'connector broken');
  await ta.call('POST', '/v1/connectors/broken/check');
  await ta.call('POST', '/v1/connectors/fix/check');
  const service = {
    owner: 'owner@bank.example',
    approvers: ['approver@bank.example'],
    tier: 3,
    links: [{ kind: 'workload', match: 'job="jobs"', connector: 'fix' }],
  };
  ok(await ta.call('PUT', '/v1/estate/overrides', { body: { services: Object.fromEntries(SERVICES.map((s) => [s, service])) } }), 'estate');
  for (const s of SERVICES)
    await ta.app.ledger.transact(async (trx) =>
      new AutonomyRepo(ta.app.db).set(trx, { service: s, level: 'L1', changed_at: ta.clock.now().toISOString(), changed_by: 'test', source: 'api' }),
    );
  return { ta, smtp };
}

/** Fires WorkerStuck on `service`, opens its episode, waits `diagnoseAfterS` and investigates; answers the episode id. */
async function open(ta: TestApp, service: string, diagnoseAfterS: number): Promise<string> {
  ok(await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: stuck(service) }), 'push');
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  ta.clock.advance(diagnoseAfterS * SECOND);
  await ta.app.investigation.investigations.run();
  await ta.app.acting.acting.run();
  return ((await ta.call('GET', `/v1/episodes?query=service:${service}`)).body.episodes as Array<{ id: string }>)[0]!.id;
}

const approvalOf = async (ta: TestApp, id: string): Promise<string> => (await ta.call('GET', `/v1/episodes/${id}`)).body.approvals[0].id as string;

/**
 * The seeded day. Expected: 3 episodes opened (jobs mitigated; batch and cron escalated),
 * diagnosis after 30, 45 and 90 s; jobs mitigated 30 + 120 + 60 = 210 s after opening; one
 * action executed and undone, one refused; three approvals asked: approved after 120 s,
 * rejected after 300 s, approved after 60 s; a halt and its resume; one autonomy change.
 */
export async function seedDay(ta: TestApp): Promise<void> {
  const approver = await signedIn(ta, 'approver@bank.example', 'viewer');

  // jobs: diagnosed after 30 s, approved after 2 minutes, executed, resolved, mitigated after the 60 s wait.
  const jobs = await open(ta, 'jobs', 30);
  ta.clock.advance(2 * MINUTE);
  ok(await ta.call('POST', `/v1/approvals/${await approvalOf(ta, jobs)}/approve`, { token: approver, body: {} }), 'approve jobs');
  await ta.app.acting.acting.run();
  ok(await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: stuck('jobs', 'resolved') }), 'resolve jobs');
  ta.clock.advance(60 * SECOND);
  await ta.app.acting.acting.run();
  ok(await ta.call('POST', `/v1/episodes/${jobs}/actions/1/undo`), 'undo');

  // batch: diagnosed after 45 s, rejected after 5 minutes: escalated.
  ta.clock.advance(10 * MINUTE);
  const batch = await open(ta, 'batch', 45);
  ta.clock.advance(5 * MINUTE);
  ok(await ta.call('POST', `/v1/approvals/${await approvalOf(ta, batch)}/reject`, { token: approver, body: {} }), 'reject batch');
  await ta.app.acting.acting.run();

  // cron: diagnosed after 90 s; halted, then approved after a minute: the gate refuses it; escalated.
  ta.clock.advance(10 * MINUTE);
  const cron = await open(ta, 'cron', 90);
  ok(await ta.call('POST', '/v1/halt', { body: { by: 'owner@bank.example', reason: 'change freeze | *quarter end*' } }), 'halt');
  ta.clock.advance(60 * SECOND);
  ok(await ta.call('POST', `/v1/approvals/${await approvalOf(ta, cron)}/approve`, { token: approver, body: {} }), 'approve cron');
  await ta.app.acting.acting.run();
  await ta.app.governance.gate.idle();
  ta.clock.advance(MINUTE);
  ok(await ta.call('POST', '/v1/autonomy', { body: { service: 'cron', level: 'shadow', by: 'owner@bank.example' } }), 'autonomy');
  ok(await ta.call('POST', '/v1/resume', { body: { by: 'owner@bank.example' } }), 'resume');
  // The fix the halt held back is proposed again; at shadow now, it is recorded, not done.
  await ta.app.acting.acting.run();

  // An alert no service claims, flapping: it starts firing three times, each time for 10 s, under
  // the 20 s debounce, so that no grouping pass (a push's nudge runs one whenever the real timer
  // fires) can ever find it old enough to open an episode.
  for (let i = 0; i < 3; i++) {
    ta.clock.advance(MINUTE);
    ok(
      await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name: HOSTILE_ALERT, severity: 'warning', status: 'firing', id: 'stray' } }),
      'stray',
    );
    ta.clock.advance(10 * SECOND);
    ok(
      await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name: HOSTILE_ALERT, severity: 'warning', status: 'resolved', id: 'stray' } }),
      'stray',
    );
  }
  ta.clock.advance(MINUTE);
  await ta.app.episodes.process();
  // The escalations reach their people: the episodes' outcome becomes `escalated` once told.
  await ta.app.notifications.run();
}
