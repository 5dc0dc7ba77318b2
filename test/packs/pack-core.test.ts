// The core pack against real peers: core/recent-change reads a throwaway git repository with real
// commits (dates set) through the git connector plugin's `changes`, and ledger events as the host
// would answer them; core/dependency-incident and core/flapping-alert read what the retrieval
// step gathers (related episodes, signals' baselines) in a real check context.
import test, { type ExecutionContext } from 'ava';
import { matches, parseMatchers } from '../../host/matchers.ts';
import type { ChangeEvent, CheckLink, CheckSignal, RelatedEpisode } from '../../host/plugins/contract.ts';
import { makeHistory, type PlannedCommit } from '../helpers/git-history.ts';
import { checkInputs, loadPack, runLive } from '../helpers/pack-readers.ts';

const OPENED = '2026-11-24T09:00:00.000Z';
const ORDERS_REPO: CheckLink = { kind: 'repository', connector: 'git-orders', path: 'services/orders', certain: true };

const commit = (at: string, author: string, subject: string, files: Record<string, string>): PlannedCommit => ({
  at,
  author,
  email: `${author.split(' ')[0]!.toLowerCase()}@bank.example`,
  subject,
  files,
});
/** 07:59 orders (61 minutes before the opening), 08:20 payments, 08:40 orders. */
const C1 = commit('2026-11-24T07:59:00Z', 'Ann Admin', 'orders: tune timeouts', { 'services/orders/app.txt': 'timeouts' });
const C2 = commit('2026-11-24T08:20:00Z', 'Bo Builder', 'payments: retry', { 'services/payments/app.txt': 'retry' });
const C3 = commit('2026-11-24T08:40:00Z', 'Cy Coder', 'orders: raise pool', { 'services/orders/app.txt': 'pool' });

const deploy = (seq: number, at: string, data: Record<string, unknown>, type = 'human.deploy', reason: string | null = 'release'): ChangeEvent => ({
  seq,
  type,
  at,
  actor: 'ops@bank.example',
  reason,
  data: { service: 'orders', ...data },
});

async function core(t: ExecutionContext) {
  const causes = await loadPack(t, 'core');
  t.deepEqual([...causes.keys()].sort(), ['core/dependency-incident', 'core/flapping-alert', 'core/recent-change']);
  return { change: causes.get('core/recent-change')!, dependency: causes.get('core/dependency-incident')!, flapping: causes.get('core/flapping-alert')! };
}

// ---- core/recent-change

test('recent-change: a commit to the linked folder in the hour before the opening holds, read by path and through a clone, with a revert of it', async (t) => {
  const { change } = await core(t);
  const { dir, shas } = makeHistory(t, [C1, C2, C3]);
  const inputs = checkInputs(OPENED, { service: { links: [ORDERS_REPO] } });
  for (const settings of [{ path: dir }, { url: `file://${dir}` }]) {
    const v = await runLive(change, inputs, { git: { 'git-orders': settings } });
    t.is(v.verdict, 'holds', v.reason);
    t.regex(
      v.reason,
      new RegExp(`^Commit ${shas[2]!.slice(0, 12)} "orders: raise pool" by Cy Coder to git-orders \\(services/orders\\), 20 minutes before the episode opened`),
    );
    t.deepEqual(v.remedy, { action: 'revert', params: { connector: 'git-orders', sha: shas[2], path: 'services/orders' }, undo: 'revert the revert commit' });
    t.is(v.verification, null, 'no verification: re-running the cause after a revert would find the revert itself');
    t.is(v.strength, 0.8, 'a commit alone may not be deployed yet');
    const commits = v.evidence.find((e) => e.kind === 'commits')!;
    t.like(commits, { source: 'git-orders', query: 'git log --since=2026-11-24T08:00:00.000Z --until=2026-11-24T09:00:00.000Z -- services/orders' });
    t.deepEqual(commits.observed, {
      count: 1,
      commits: [{ sha: shas[2], at: '2026-11-24T08:40:00.000Z', author: 'Cy Coder', subject: 'orders: raise pool' }],
    });
    t.false(JSON.stringify(v).includes('@bank.example'), 'no author e-mail reaches the verdict');
    t.like(
      v.evidence.find((e) => e.kind === 'deploys'),
      { source: 'ledger', observed: { count: 0, events: [] } },
    );
  }
});

test('recent-change: near miss: a commit 61 minutes before the opening is outside the window (and inside a 61-minute one)', async (t) => {
  const { change } = await core(t);
  const { dir, shas } = makeHistory(t, [C1, C2]);
  const world = { git: { 'git-orders': { path: dir } } };
  const v = await runLive(change, checkInputs(OPENED, { service: { links: [ORDERS_REPO] } }), world);
  t.is(v.verdict, 'ruled_out', v.reason);
  t.is(
    v.reason,
    'No commit to a linked repository and no deploy or action for orders in the 60 minutes before the episode opened (2026-11-24 08:00:00Z to 2026-11-24 09:00:00Z).',
  );
  t.like(
    v.evidence.find((e) => e.kind === 'commits'),
    { source: 'git-orders', observed: { count: 0, commits: [] } },
  );
  t.is(v.remedy, null);
  const wider = await runLive(
    change,
    checkInputs(OPENED, { service: { links: [ORDERS_REPO] }, overrides: { 'core/recent-change': { window_minutes: 61 } } }),
    world,
  );
  t.is(wider.verdict, 'holds', wider.reason);
  t.is((wider.remedy?.params as { sha: string }).sha, shas[0]!);
});

test('recent-change: a deploy from a pipeline after the commit holds with the runbook of that pipeline; a deploy by hand names no remedy', async (t) => {
  const { change } = await core(t);
  const { dir } = makeHistory(t, [C3]);
  const git = { 'git-orders': { path: dir } };
  const inputs = checkInputs(OPENED, { service: { links: [ORDERS_REPO] } });
  const piped = deploy(41, '2026-11-24T08:50:00.000Z', { pipeline: 'orders-deploy', version: 'v42', previous_version: 'v41', secret_note: { nested: true } });
  const v = await runLive(change, inputs, { git, events: [piped, deploy(7, '2026-11-24T07:00:00.000Z', { pipeline: 'old' })] });
  t.is(v.verdict, 'holds', v.reason);
  t.regex(
    v.reason,
    /^Deploy from pipeline orders-deploy by ops@bank\.example \("release"\), ledger event 41, 10 minutes before the episode opened\. It is the latest of 2 changes in the 60 minutes before\.$/,
  );
  t.deepEqual(v.remedy, {
    action: 'runbook',
    // A runbook remedy always names its runbook: the pipeline's.
    params: { name: 'orders-deploy', event: 41, pipeline: 'orders-deploy', version: 'v42', previous_version: 'v41' },
    undo: 'run the pipeline again for the version it rolled back',
  });
  t.is(v.strength, 1, 'a deploy changed what runs');
  t.like(
    v.evidence.find((e) => e.kind === 'deploys'),
    { source: 'ledger', observed: { count: 1 } },
  );

  const byHand = await runLive(change, inputs, { git, events: [deploy(42, '2026-11-24T08:55:00.000Z', {}, 'human.action', 'restarted by hand')] });
  t.is(byHand.verdict, 'holds');
  t.regex(byHand.reason, /^Action by ops@bank\.example \("restarted by hand"\), ledger event 42, 5 minutes before/);
  t.is(byHand.remedy, null, 'a change made by hand is for a person to undo');
  t.regex(
    byHand.reason,
    /No remedy is proposed: the human\.action by ops@bank\.example names no commit, pipeline or runbook/,
    'and the reason says why there is none',
  );
  const otherTypes = await runLive(change, checkInputs(OPENED, { service: { links: [ORDERS_REPO] } }), {
    git: { 'git-orders': { path: makeHistory(t, [C1]).dir } },
    events: [deploy(43, '2026-11-24T08:55:00.000Z', {}, 'check.finished')],
  });
  t.is(otherTypes.verdict, 'ruled_out', 'only human.deploy and human.action events are changes');
});

test("recent-change: a deploy that names a commit does not hide the commit's revert, with or without a pipeline", async (t) => {
  const { change } = await core(t);
  const { dir, shas } = makeHistory(t, [C3]);
  const git = { 'git-orders': { path: dir } };
  const inputs = checkInputs(OPENED, { service: { links: [ORDERS_REPO] } });
  // The deploy is the latest change, and it names the commit it shipped (abbreviated).
  for (const data of [{ pipeline: 'orders-deploy', commit: shas[0]!.slice(0, 12) }, { sha: shas[0]! }]) {
    const v = await runLive(change, inputs, { git, events: [deploy(41, '2026-11-24T08:50:00.000Z', data)] });
    t.is(v.verdict, 'holds', v.reason);
    t.deepEqual(v.remedy, { action: 'revert', params: { connector: 'git-orders', sha: shas[0], path: 'services/orders' }, undo: 'revert the revert commit' });
  }
  // A deploy naming a commit no linked repository holds, and no pipeline: no remedy, and why.
  const unknownSha = await runLive(change, inputs, { git, events: [deploy(42, '2026-11-24T08:55:00.000Z', { commit: 'abcdef1234567' })] });
  t.is(unknownSha.remedy, null);
  t.regex(
    unknownSha.reason,
    /No remedy is proposed: the human\.deploy names commit abcdef123456, which no linked repository holds, and no pipeline or runbook\./,
  );
});

test('recent-change: the revert of a commit read through a repository link without a folder carries no path (the git connector refuses ".")', async (t) => {
  const { change } = await core(t);
  const { dir, shas } = makeHistory(t, [C3]);
  const whole: CheckLink = { kind: 'repository', connector: 'git-orders', certain: true };
  const v = await runLive(change, checkInputs(OPENED, { service: { links: [whole] } }), { git: { 'git-orders': { path: dir } } });
  t.is(v.verdict, 'holds', v.reason);
  t.deepEqual(v.remedy, { action: 'revert', params: { connector: 'git-orders', sha: shas[0] }, undo: 'revert the revert commit' });
});

test('recent-change: a repository that cannot be read is unknown with its obstacle when nothing is found, and does not hide a change that is', async (t) => {
  const { change } = await core(t);
  const inputs = checkInputs(OPENED, { service: { links: [ORDERS_REPO] } });
  const world = { git: { 'git-orders': { path: '/nonexistent/oncall/orders' } } };
  const v = await runLive(change, inputs, world);
  t.is(v.verdict, 'unknown');
  t.is(v.obstacle, 'the read was refused or failed');
  t.regex(v.reason, /but not everything could be read: git-orders: no folder \/nonexistent\/oncall\/orders on the service machine\.$/);
  t.true(
    v.evidence.some((e) => e.kind === 'deploys'),
    'what was read is still shown',
  );
  const found = await runLive(change, inputs, { ...world, events: [deploy(9, '2026-11-24T08:30:00.000Z', {})] });
  t.is(found.verdict, 'holds', found.reason);
  t.regex(found.reason, /Not read: git-orders: no folder/);

  const unlinked = await runLive(change, checkInputs(OPENED), {});
  t.is(unlinked.verdict, 'unknown');
  t.is(unlinked.obstacle, 'nothing connected can read it');
  t.regex(unlinked.reason, /no repository is linked to orders in the estate/);
});

// ---- core/dependency-incident

const episode = (id: string, service: string, t_open: string, t_close: string | null = null): RelatedEpisode => ({
  id,
  service,
  state: t_close === null ? 'open' : 'closed',
  t_open,
  t_close,
  alerts: ['PaymentsErrors'],
});

test('dependency-incident: an open episode of a dependency holds and names it; none open is ruled out', async (t) => {
  const { dependency } = await core(t);
  const service = { depends_on: ['payments', 'ledger-db'] };
  const open = await runLive(
    dependency,
    checkInputs(OPENED, { service, related: { dependencies: [episode('ep-pay', 'payments', '2026-11-24T08:57:00.000Z')], history: [] } }),
  );
  t.is(open.verdict, 'holds', open.reason);
  t.is(open.reason, 'orders depends on payments, which has had an episode open since 2026-11-24 08:57:00Z (ep-pay: PaymentsErrors).');
  t.is(open.remedy, null, 'the diagnosis points at the dependency: nothing to do to this service');
  t.like(open.evidence[1], { source: 'episodes', observed: { count: 1, episodes: [{ id: 'ep-pay', service: 'payments', state: 'open' }] } });

  const lingering = await runLive(
    dependency,
    checkInputs(OPENED, {
      service,
      related: { dependencies: [episode('ep-pay', 'payments', '2026-11-24T08:50:00.000Z', '2026-11-24T09:05:00.000Z')], history: [] },
    }),
  );
  t.is(lingering.verdict, 'holds', 'closed since, but open when this episode opened');

  const none = await runLive(
    dependency,
    checkInputs(OPENED, {
      service,
      related: {
        dependencies: [episode('ep-old', 'payments', '2026-11-24T07:00:00.000Z', '2026-11-24T08:59:00.000Z'), episode('ep-x', 'search', OPENED)],
        history: [],
      },
    }),
  );
  t.is(none.verdict, 'ruled_out', 'closed before the opening, or not a dependency');
  t.is(none.reason, 'None of the dependencies of orders (payments, ledger-db) has an episode open.');
});

test('dependency-incident: a service not in the estate cannot be placed; one with no dependencies is ruled out', async (t) => {
  const { dependency } = await core(t);
  const unplaced = await runLive(dependency, checkInputs(OPENED, { service: { name: 'unknown', in_estate: false } }));
  t.is(unplaced.verdict, 'unknown');
  t.is(unplaced.obstacle, "it can't be placed");
  const alone = await runLive(dependency, checkInputs(OPENED));
  t.is(alone.verdict, 'ruled_out');
  t.is(alone.reason, 'The estate lists no dependencies of orders, so none can have an incident.');
  t.like(alone.evidence[0], { source: 'estate', observed: { depends_on: [] } });
});

// ---- core/flapping-alert

const signal = (firings_7d: number, flapping = false, labels: Record<string, string> = {}): CheckSignal => ({
  fingerprint: `fp-${firings_7d}`,
  name: 'OrdersLatency',
  severity: 'warning',
  status: 'firing',
  labels: { alertname: 'OrdersLatency', service: 'orders', instance: 'orders-1:9100', siem: 'alertmanager', 'kubernetes.pod': 'x', ...labels },
  starts_at: null,
  expression: null,
  summary: '',
  joined_at: OPENED,
  baseline: { first_seen: '2026-11-01T00:00:00.000Z', last_seen: OPENED, firings_7d, firings_30d: firings_7d * 3, flapping },
});

test('flapping-alert: 10 firings in 7 days holds with a silence of exactly that alert; 9 is a near miss', async (t) => {
  const { flapping } = await core(t);
  const v = await runLive(flapping, checkInputs(OPENED, { signals: [signal(10, false, { note: 'a "quoted" \\ value' })] }));
  t.is(v.verdict, 'holds', v.reason);
  t.is(v.reason, 'OrdersLatency fired 10 times in 7 days (it counts from 10): it fires and clears on its own.');
  const params = v.remedy!.params as { alert: string; matchers: string; duration_s: number };
  t.is(v.remedy!.action, 'silence');
  t.is(params.alert, 'fp-10', 'the silence names its alert, so the host can bound it');
  t.is(params.matchers, 'alertname="OrdersLatency",instance="orders-1:9100",note="a \\"quoted\\" \\\\ value",service="orders"');
  t.is(params.duration_s, 3600);
  const parsed = parseMatchers(params.matchers);
  t.true(parsed.ok && matches(parsed.matchers, signal(10, false, { note: 'a "quoted" \\ value' }).labels), 'the matchers select the alert');
  t.true(parsed.ok && !matches(parsed.matchers, signal(10, false, { note: 'a "quoted" \\ value', instance: 'orders-2:9100' }).labels), 'and not its sibling');
  const polled = await runLive(flapping, checkInputs(OPENED, { signals: [signal(10, false, { poller: 'am-prod' })] }));
  t.false((polled.remedy!.params as { matchers: string }).matchers.includes('poller'), 'the label the host stamps on a polled alert is no label of it');
  t.like(v.evidence[0], { source: 'signals', kind: 'baseline', observed: { firings_7d: 10, flapping: false } });

  const nine = await runLive(flapping, checkInputs(OPENED, { signals: [signal(9)] }));
  t.is(nine.verdict, 'ruled_out');
  t.is(nine.reason, 'No alert of the episode flaps: the most fired, OrdersLatency, fired 9 times in 7 days (it counts from 10).');
  const lower = await runLive(flapping, checkInputs(OPENED, { signals: [signal(9)], overrides: { 'core/flapping-alert': { firings_7d: 5, silence_s: 600 } } }));
  t.is(lower.verdict, 'holds', "the estate's threshold for the service wins");
  t.is((lower.remedy!.params as { duration_s: number }).duration_s, 600);
});

test("flapping-alert: intake's flapping mark holds below the count; no alert at all is unknown", async (t) => {
  const { flapping } = await core(t);
  const marked = await runLive(flapping, checkInputs(OPENED, { signals: [signal(2), signal(3, true)] }));
  t.is(marked.verdict, 'holds');
  t.regex(marked.reason, /^OrdersLatency is marked as flapping by intake \(fired 3 times in 7 days\)/);
  t.is((marked.evidence[0]!.observed as { fingerprint: string }).fingerprint, 'fp-3', 'the flapping alert comes first');
  const none = await runLive(flapping, checkInputs(OPENED));
  t.is(none.verdict, 'unknown');
  t.is(none.obstacle, "the data isn't there");
});
