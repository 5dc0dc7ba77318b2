// The eval's judge (test/eval/judge.ts, heartbeat.ts) on episodes written here: it must call a
// right diagnosis right and every kind of wrong one wrong, with the reason, so `npm run eval`
// reports honestly. The eval itself runs real peers (`npm run eval`, docs/packs.md).
import test from 'ava';
import { judgeHeartbeat } from '../eval/heartbeat.ts';
import { judge, settled } from '../eval/judge.ts';
import type { AmAlert, EpisodeView, Observer } from '../eval/observe.ts';
import { SCENARIOS, type Scenario, type World } from '../eval/scenarios.ts';

const HOST = '127.0.0.1:9100';
const T = (s: number): string => new Date(Date.UTC(2026, 10, 27, 10, 0, s)).toISOString();

const world = {
  facts: new Map([['loans:sha', 'a'.repeat(40)]]),
  host: () => ({ target: HOST }),
  healthUrl: (name: string) => `http://127.0.0.1:8080/${name}/health`,
} as unknown as World;

const scenario = (id: string): Scenario => SCENARIOS.find((s) => s.id === id)!;

function observer(episodes: EpisodeView[], alerts: AmAlert[] = [], heartbeatEvents: Observer['heartbeatEvents'] = []): Observer {
  return { episodes: new Map(episodes.map((e) => [e.id, e])), alerts: new Map(alerts.map((a, i) => [String(i), a])), heartbeatEvents } as unknown as Observer;
}

/** An episode of `service` holding `signals`, diagnosed once at second 30 (checks from second 29.5), with `holds` ranked. */
function episode(service: string, signals: Array<[string, Record<string, string>, number]>, holds: string[], over: Partial<EpisodeView> = {}): EpisodeView {
  return {
    id: `ep-${service}`,
    kind: 'incident',
    state: 'open',
    service,
    alerts: signals.map(([n]) => n),
    note: null,
    t_open: T(25),
    outcome: null,
    signals: signals.map(([name, labels, at], i) => ({ fingerprint: `fp${i}`, name, labels, joined_at: T(at) })),
    investigation: { state: 'diagnosed', run: 1 },
    verdicts: [
      ...holds.map((cause) => ({ cause, verdict: 'holds', reason: `${cause} holds`, obstacle: null })),
      { cause: 'prometheus/latency', verdict: 'ruled_out', reason: 'p99 5 ms', obstacle: null },
    ],
    diagnosis: { holds, unknown: [], summary: '' },
    proposal: null,
    rehearsal: null,
    policy_decision: { decision: 'abstain', reason: 'shadow' },
    timeline: [
      { seq: 1, at: new Date(Date.parse(T(29)) + 500).toISOString(), type: 'check.started', data: { run: 1 } },
      { seq: 2, at: T(30), type: 'decision.diagnosed', data: { run: 1 } },
    ],
    ...over,
  };
}

const disk = (): EpisodeView => episode('statements', [['HostOutOfDiskSpace', { job: 'node', instance: HOST }, 25]], ['prometheus/disk-full']);

test('a diagnosis naming the expected cause first, with nothing else holding, is right, timed from the alert’s startsAt', (t) => {
  const o = observer([disk()], [{ labels: { alertname: 'HostOutOfDiskSpace', job: 'node', instance: HOST }, startsAt: T(0) }]);
  const j = judge(scenario('disk-full'), world, o, new Map([['fp0', Date.parse(T(5))]]));
  t.true(j.right, j.problems.join('; '));
  t.like(j, { placed: 'statements', top: 'prometheus/disk-full', alertToDiagnosisS: 30, arrivalToDiagnosisS: 25, checksS: 0.5, falseHolds: [] });
});

test('a cause holding that the scenario does not allow is a false hold, and makes it wrong', (t) => {
  const o = observer([episode('statements', [['HostOutOfDiskSpace', { job: 'node', instance: HOST }, 25]], ['prometheus/disk-full', 'prometheus/restarts'])]);
  const j = judge(scenario('disk-full'), world, o, new Map());
  t.false(j.right);
  t.deepEqual(j.falseHolds, ['prometheus/restarts']);
  t.regex(j.problems.join('\n'), /prometheus\/restarts holds and must not/);
});

test('in the healthy control any cause holding is false, and a wrong top cause is named with the expected one’s verdict', (t) => {
  const control = judge(
    scenario('control'),
    world,
    observer([episode('catalog', [['CatalogTrafficHigh', { job: 'catalog' }, 25]], ['prometheus/restarts'])]),
    new Map(),
  );
  t.false(control.right);
  t.deepEqual(control.falseHolds, ['prometheus/restarts']);
  const quiet = judge(scenario('control'), world, observer([episode('catalog', [['CatalogTrafficHigh', { job: 'catalog' }, 25]], [])]), new Map());
  t.true(quiet.right, quiet.problems.join('; '));
  const slow = judge(
    scenario('latency'),
    world,
    observer([episode('quotes', [['HighLatencyP99', { job: 'quotes' }, 25]], ['prometheus/restarts'])]),
    new Map(),
  );
  t.regex(slow.problems.join('\n'), /top cause prometheus\/restarts, expected prometheus\/latency \(ruled_out: p99 5 ms\)/);
});

test('an alert placed on another service is misplaced; an alert in no episode is wrong too', (t) => {
  const url = world.healthUrl('web-portal');
  const phantom = episode('blackbox', [['BlackboxProbeFailed', { job: 'blackbox', instance: url }, 25]], ['http/endpoint-down']);
  const j = judge(scenario('probe-unlabelled'), world, observer([phantom]), new Map());
  t.true(j.misplaced);
  t.false(j.right);
  const none = judge(scenario('probe-unlabelled'), world, observer([]), new Map());
  t.false(none.right);
  t.regex(none.problems[0]!, /no episode holds BlackboxProbeFailed/);
});

test('a joining scenario is settled only by a run that started after its second alert joined', (t) => {
  const first = episode('cards', [['HighErrorRate', { job: 'cards' }, 25]], ['prometheus/error-rate']);
  t.false(settled(scenario('joining'), world, observer([first])));
  const joinedNotRerun = {
    ...first,
    signals: [...first.signals, { fingerprint: 'fp9', name: 'HostOutOfDiskSpace', labels: { instance: HOST }, joined_at: T(40) }],
  };
  t.false(settled(scenario('joining'), world, observer([joinedNotRerun])));
  const rerun = {
    ...joinedNotRerun,
    diagnosis: { holds: ['prometheus/disk-full', 'prometheus/error-rate'], unknown: [], summary: '' },
    timeline: [
      ...first.timeline,
      { seq: 3, at: T(41), type: 'check.started', data: { run: 2 } },
      { seq: 4, at: T(42), type: 'decision.diagnosed', data: { run: 2 } },
    ],
  };
  const o = observer([rerun], [{ labels: { alertname: 'HostOutOfDiskSpace', instance: HOST }, startsAt: T(35) }]);
  t.true(settled(scenario('joining'), world, o));
  const j = judge(scenario('joining'), world, o, new Map());
  t.true(j.right, j.problems.join('; '));
  t.like(j, { alertToDiagnosisS: 7, checksS: 1 });
});

test('words the scenario forbids in a holding verdict’s reason make it wrong: a refused connection called a timeout, one target named twice', (t) => {
  const ep = episode('payments-gateway', [['TargetDown', { job: 'payments-gateway' }, 25]], ['prometheus/target-down', 'http/endpoint-down']);
  ep.verdicts = [
    { cause: 'prometheus/target-down', verdict: 'holds', reason: '2 of 2 targets are down: 127.0.0.1:4000, 127.0.0.1:4000', obstacle: null },
    { cause: 'http/endpoint-down', verdict: 'holds', reason: 'got no answer (timeout 5 s): connection refused', obstacle: null },
  ];
  const j = judge(scenario('endpoint-down'), world, observer([ep]), new Map());
  t.false(j.right);
  t.is(j.problems.length, 2, j.problems.join('\n'));
  ep.verdicts = [
    { cause: 'prometheus/target-down', verdict: 'holds', reason: '1 of 1 targets is down: 127.0.0.1:4000', obstacle: null },
    { cause: 'http/endpoint-down', verdict: 'holds', reason: 'connection refused after 31 ms', obstacle: null },
  ];
  t.true(judge(scenario('endpoint-down'), world, observer([ep]), new Map()).right);
});

test('a change scenario needs the revert of the bad commit, rehearsed successfully', (t) => {
  const sha = world.facts.get('loans:sha')!;
  const base = episode('loans', [['HighErrorRate', { job: 'loans' }, 25]], ['core/recent-change', 'prometheus/error-rate']);
  const proposal = { action: 'revert', connector: 'loans-repo', params: { sha, path: '.' } };
  const failed = judge(
    scenario('change-no-deploy'),
    world,
    observer([{ ...base, proposal, rehearsal: { ok: false, problem: 'path must be a folder' } }]),
    new Map(),
  );
  t.false(failed.right);
  t.regex(failed.problems.join('\n'), /the rehearsal failed: path must be a folder/);
  const none = judge(scenario('change-no-deploy'), world, observer([base]), new Map());
  t.regex(none.problems.join('\n'), /proposal none \(shadow\), expected revert sha=aaaaaaaaaaaa/);
  const good = judge(
    scenario('change-no-deploy'),
    world,
    observer([{ ...base, proposal: { ...proposal, params: { sha } }, rehearsal: { ok: true } }]),
    new Map(),
  );
  t.true(good.right, good.problems.join('; '));
});

test('the heartbeat: the Watchdog opening an episode is wrong, and so is no incident after it stopped, or one before the timeout', (t) => {
  const watchdog = { ...episode('unknown', [['Watchdog', {}, 5]], []), id: 'ep-watchdog', t_open: T(5), state: 'closed' };
  const stoppedAt = Date.parse(T(10));
  const wrong = judgeHeartbeat(scenario('heartbeat'), observer([watchdog]), { stoppedAt, settingProblem: null });
  t.false(wrong.right);
  t.is(wrong.problems.length, 2, wrong.problems.join('\n'));
  const incident = { ...episode('alertmanager', [['HeartbeatExpired', { source: 'alertmanager' }, 75]], []), id: 'ep-hb', t_open: T(75) };
  const right = judgeHeartbeat(scenario('heartbeat'), observer([incident]), { stoppedAt, settingProblem: null });
  t.true(right.right, right.problems.join('; '));
  t.is(right.alertToDiagnosisS, 65);
  const early = judgeHeartbeat(scenario('heartbeat'), observer([{ ...incident, t_open: T(30) }]), { stoppedAt, settingProblem: null });
  t.regex(early.problems.join('\n'), /opened 20 s after the Watchdog stopped: before its 60 s timeout/);
  // A Watchdog its tool resolved is missing at once: the incident may open early, not before the resolve.
  const resolved = [{ type: 'signal.heartbeat_missing', at: T(12), reason: 'Watchdog from alertmanager was resolved by its tool: it stopped firing' }];
  t.true(judgeHeartbeat(scenario('heartbeat'), observer([{ ...incident, t_open: T(30) }], [], resolved), { stoppedAt, settingProblem: null }).right);
  const beforeResolve = judgeHeartbeat(scenario('heartbeat'), observer([{ ...incident, t_open: T(11) }], [], resolved), { stoppedAt, settingProblem: null });
  t.regex(beforeResolve.problems.join('\n'), /opened before the Watchdog's resolve arrived/);
});
