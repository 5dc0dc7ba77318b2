// Issue 22, item 1: an action derived from an alert is never wider than that alert's service. The
// scope rules on their own (host/acting/scope.ts), then the exact attack with only the ingest token
// against Debian's real Alertmanager: a flapping generic alert, and a pushed Alertmanager-shaped
// copy of another service's alert, at an L2 service with `silence` safe for L2, silence nothing.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { MINUTE, SECOND, TestClock } from '../../host/clock.ts';
import { decide } from '../../host/acting/policy-decision.ts';
import type { Performer, Proposal } from '../../host/acting/proposal.ts';
import { scopeOf, type ScopeInputs } from '../../host/acting/scope.ts';
import type { ServiceView } from '../../host/estate/estate.model.ts';
import { alertmanagerTest, startAlertmanager, type RunningAlertmanager } from '../helpers/alertmanager.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';

const declaration = { description: 'silences', params: {}, rehearsable: true, reversible: true };
const am = (name: string): Performer => ({ name, kind: 'alertmanager', declaration, fault: null });
const silence = (params: Record<string, unknown>, connector = 'am'): Proposal => ({
  action: 'silence',
  connector,
  params: { duration_s: 3600, ...params },
  why: 'it flaps',
  undo: 'expire the silence',
  verify: { cause: 'core/flapping-alert', expect: 'ruled_out', after_s: 120 },
  cause: 'core/flapping-alert',
  rehearsable: true,
  reversible: true,
});
const view = (links: ServiceView['links'] = []): ServiceView => ({ name: 'payments', links }) as unknown as ServiceView;
const NORMALISERS: Record<string, string> = { alertmanager: 'alertmanager', grafana: 'alertmanager', prometheus: 'alertmanager' };
const inputs = (signals: ScopeInputs['signals'], more: Partial<ScopeInputs> = {}): ScopeInputs => ({
  service: 'payments',
  view: view(),
  signals,
  performers: [am('am'), am('am-dr')],
  normaliserOf: (w) => NORMALISERS[w] ?? 'generic',
  ...more,
});
const pushed = {
  fingerprint: 'a1b2c3d4e5f60718',
  name: 'HighErrorRate',
  source: 'alertmanager',
  labels: { alertname: 'HighErrorRate', service: 'payments', siem: 'alertmanager' },
};

test('a silence of a pushed Alertmanager alert naming its every label is bounded to it and goes to an Alertmanager connector', (t) => {
  const s = scopeOf(silence({ alert: pushed.fingerprint, matchers: 'alertname="HighErrorRate",service="payments"' }), inputs([pushed]));
  t.true(s.bounded, s.detail);
  if (!s.bounded) return;
  t.is(s.proposal.connector, 'am');
  t.is(s.proposal.params.matchers, 'alertname="HighErrorRate",service="payments"', 'the service label already places it');
  t.regex(s.detail, /^HighErrorRate of payments only/);
});

test('a pushed generic alert was sent by no Alertmanager: its silence cannot be bounded, and the decision refuses it at L2', (t) => {
  const generic = { fingerprint: 'f'.repeat(32), name: 'HighErrorRate', source: 'generic', labels: { siem: 'generic' } };
  const s = scopeOf(silence({ alert: generic.fingerprint, matchers: 'alertname="HighErrorRate"' }), inputs([generic]));
  t.false(s.bounded);
  t.regex(s.detail, /^the silence cannot be bounded to payments: HighErrorRate was pushed as a generic alert, not by a alertmanager such as am/);
  const policy = { freeze_windows: [], always_approve: [], safe_for_l2: ['silence'], max_actions_per_service_per_hour: 3 };
  const d = decide(silence({ alert: generic.fingerprint, matchers: 'alertname="HighErrorRate"' }), {
    level: 'L2',
    halted: false,
    policy,
    ranLastHour: 0,
    now: new Date(),
    scope: s,
  });
  t.like(d, { decision: 'abstain', approval: false, reason: s.detail });
  t.like(d.checks[0], { name: 'scope', passed: false });
  // Bounded, the same decision acts unasked.
  const ok = decide(silence({}), { level: 'L2', halted: false, policy, ranLastHour: 0, now: new Date(), scope: { bounded: true, detail: 'x' } });
  t.like(ok, { decision: 'act', approval: false });
});

test('matchers that leave out a label of the alert, or that name no alert of the episode, are refused', (t) => {
  const withInstance = { ...pushed, labels: { ...pushed.labels, instance: 'pay-1:9100' } };
  const fewer = scopeOf(silence({ alert: pushed.fingerprint, matchers: 'alertname="HighErrorRate",service="payments"' }), inputs([withInstance]));
  t.false(fewer.bounded);
  t.regex(fewer.detail, /leave out labels of HighErrorRate \(instance\)/);
  t.regex(scopeOf(silence({ matchers: 'alertname="HighErrorRate"' }), inputs([pushed])).detail, /names no alert of the episode/);
  t.regex(scopeOf(silence({ alert: 'nope', matchers: 'alertname="HighErrorRate"' }), inputs([pushed])).detail, /alert nope is not one of the episode's/);
  const contradicts = scopeOf(silence({ alert: pushed.fingerprint, matchers: 'alertname="HighErrorRate",service="payments",env!=""' }), inputs([pushed]));
  t.regex(contradicts.detail, /do not select HighErrorRate itself/);
});

test('a polled alert is silenced only through the connector that polled it, whatever the proposal named', (t) => {
  const polled = { ...pushed, source: 'alertmanager', labels: { ...pushed.labels, poller: 'am-dr' } };
  const s = scopeOf(silence({ alert: pushed.fingerprint, matchers: 'alertname="HighErrorRate",service="payments"' }, 'am'), inputs([polled]));
  t.true(s.bounded, s.detail);
  if (s.bounded) t.is(s.proposal.connector, 'am-dr');
  const broken = scopeOf(
    silence({ alert: pushed.fingerprint, matchers: 'alertname="HighErrorRate",service="payments"' }),
    inputs([polled], { performers: [am('am'), { ...am('am-dr'), fault: 'its settings are incomplete' }] }),
  );
  t.false(broken.bounded);
  t.regex(broken.detail, /polled by connector am-dr, which cannot perform silence \(its settings are incomplete\)/);
});

test("an alert placed by an estate link gets the link's matchers added; one whose service nothing in its labels names is refused", (t) => {
  const byJob = { fingerprint: 'b'.repeat(16), name: 'Down', source: 'grafana', labels: { alertname: 'Down', job: 'pay-api', siem: 'grafana' } };
  const linked = inputs([byJob], { view: view([{ kind: 'workload', match: 'job="pay-api",env!="dev"', origin: 'override', certain: true }]) });
  const s = scopeOf(silence({ alert: byJob.fingerprint, matchers: 'alertname="Down",job="pay-api"' }), linked);
  t.true(s.bounded, s.detail);
  if (s.bounded) t.is(s.proposal.params.matchers, 'alertname="Down",job="pay-api",env!="dev"');
  const unplaced = scopeOf(silence({ alert: byJob.fingerprint, matchers: 'alertname="Down",job="pay-api"' }), inputs([byJob]));
  t.false(unplaced.bounded);
  t.regex(unplaced.detail, /no label of Down names payments and no alert or workload link of payments matches it/);
});

test('an action of any other kind is scoped to the service', (t) => {
  const restart = { ...silence({}), action: 'restart', params: { target: 'worker' } };
  t.like(scopeOf(restart, inputs([])), { bounded: true, detail: 'restart on payments via am' });
});

// ---- the attack, with only the ingest token, against a real Alertmanager -----------------------

const AM_CONFIG = `route:
  receiver: nowhere
  group_wait: 1h
receivers:
  - name: nowhere
`;
const VICTIM = { alertname: 'HighErrorRate', service: 'ledger', severity: 'critical' };

interface Attack {
  ta: TestApp;
  am: RunningAlertmanager;
  /** Alertmanager's fingerprint of the ledger service's alert. */
  victim: string;
}

/**
 * `payments` at L2 (autonomy.json) with `silence` safe for L2, `ledger` never above shadow, an
 * `alertmanager` connector on a real Alertmanager where ledger's HighErrorRate fires.
 */
async function attackable(t: ExecutionContext, links: Array<Record<string, string>> = []): Promise<Attack> {
  const am = await startAlertmanager(t, AM_CONFIG);
  const posted = await fetch(`${am.base}/api/v2/alerts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([{ labels: VICTIM, annotations: { summary: 'ledger errors' } }]),
  });
  t.is(posted.status, 200);
  const victim = ((await (await fetch(`${am.base}/api/v2/alerts`)).json()) as Array<{ fingerprint: string }>)[0]!.fingerprint;
  const configDir = mkdtempSync(path.join(tmpdir(), 'oncall-scope-config-'));
  t.teardown(() => rmSync(configDir, { recursive: true, force: true }));
  writeFileSync(path.join(configDir, 'autonomy.json'), JSON.stringify({ services: { payments: 'L2' } }));
  const ta = await startApp(t, { clock: new TestClock(new Date()), env: { SERVICE_CONFIG_DIR: configDir }, manualTick: true });
  await makeOperating(ta);
  t.is((await ta.call('PUT', '/v1/connectors/am', { body: { kind: 'alertmanager', settings: { url: am.base } } })).status, 201);
  const owner = 'owner@bank.example';
  const put = await ta.call('PUT', '/v1/estate/overrides', {
    body: { services: { payments: { owner, tier: 3, links }, ledger: { owner, tier: 1 } } },
  });
  t.is(put.status, 200, JSON.stringify(put.body));
  const { version: _v, source: _s, updated_at: _u, updated_by: _b, ...policy } = (await ta.call('GET', '/v1/policy')).body;
  t.is((await ta.call('PUT', '/v1/policy', { body: { ...policy, safe_for_l2: ['silence'] } })).status, 200);
  t.is((await ta.call('GET', '/v1/autonomy')).body.services.find((s: any) => s.service === 'payments')?.level, 'L2');
  return { ta, am, victim };
}

/** Pushes `body` to `source` with the ingest token ten times firing and cleared inside the debounce, then firing: it flaps. */
async function flap(t: ExecutionContext, ta: TestApp, source: string, body: (status: 'firing' | 'resolved') => unknown): Promise<string> {
  const push = async (status: 'firing' | 'resolved') => {
    const r = await ta.call('POST', `/v1/alerts/${source}`, { token: INGEST_TOKEN, body: body(status) });
    t.is(r.status, 202, JSON.stringify(r.body));
  };
  for (let i = 0; i < 10; i++) {
    await push('firing');
    ta.clock.advance(5 * SECOND);
    await ta.app.episodes.process();
    await push('resolved');
    ta.clock.advance(2 * MINUTE);
    await ta.app.episodes.process();
  }
  await push('firing');
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  await ta.app.investigation.investigations.run();
  await ta.app.acting.acting.run();
  const list = (await ta.call('GET', '/v1/episodes?query=service:payments')).body.episodes as any[];
  t.is(list.length, 1, JSON.stringify(list));
  return list[0].id as string;
}

async function nothingSilenced(t: ExecutionContext, a: Attack): Promise<void> {
  t.deepEqual(await (await fetch(`${a.am.base}/api/v2/silences`)).json(), [], 'Alertmanager holds no silence');
  const alerts = (await (await fetch(`${a.am.base}/api/v2/alerts`)).json()) as Array<{ fingerprint: string; status: { state: string } }>;
  t.is(alerts.find((x) => x.fingerprint === a.victim)?.status.state, 'active', "ledger's alert still pages");
  t.true((await a.ta.call('GET', '/v1/ledger/verify')).body.ok);
}

alertmanagerTest('the ingest token flapping a generic alert at an L2 service with silence safe for L2 silences nothing', async (t) => {
  const a = await attackable(t);
  const id = await flap(t, a.ta, 'generic', (status) => ({ name: 'HighErrorRate', service: 'payments', severity: 'critical', status }));
  const ep = (await a.ta.call('GET', `/v1/episodes/${id}`)).body;
  t.like(ep.proposal, { action: 'silence', cause: 'core/flapping-alert' });
  t.like(ep.policy_decision, { decision: 'abstain', level: 'L2' });
  t.regex(ep.policy_decision.reason, /^the silence cannot be bounded to payments: HighErrorRate was pushed as a generic alert/);
  t.like(
    ep.policy_decision.checks.find((c: any) => c.name === 'scope'),
    { passed: false },
  );
  t.false(
    ep.timeline.some((e: any) => e.type.startsWith('action.')),
    'nothing rehearsed, nothing run',
  );
  await nothingSilenced(t, a);
});

alertmanagerTest(
  "the ingest token pushing an Alertmanager-shaped copy of another service's alert (its fingerprint, fewer labels) silences nothing",
  async (t) => {
    // payments takes every HighErrorRate without a service label: the copy lands there.
    const a = await attackable(t, [{ kind: 'alert', match: 'alertname="HighErrorRate"' }]);
    const id = await flap(t, a.ta, 'alertmanager', (status) => ({
      version: '4',
      status,
      alerts: [{ status, labels: { alertname: 'HighErrorRate' }, fingerprint: a.victim, startsAt: new Date().toISOString() }],
    }));
    const ep = (await a.ta.call('GET', `/v1/episodes/${id}`)).body;
    // The host's bound holds (every label it was sent is named, the link places it) ...
    t.like(ep.proposal, { action: 'silence', connector: 'am', params: { alert: a.victim, matchers: 'alertname="HighErrorRate"' } });
    // ... and the Alertmanager's own alert of that fingerprint has a label the copy did not name.
    t.like(ep.rehearsal, { ok: false });
    t.regex(ep.rehearsal.problem, /leaves out labels of alert [0-9a-f]+ \(service, severity\)/);
    t.false(ep.timeline.some((e: any) => e.type === 'action.executed'));
    t.is(ep.path_state, 'done');
    await nothingSilenced(t, a);
  },
);
