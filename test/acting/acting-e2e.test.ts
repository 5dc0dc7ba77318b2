// The proof of issue 15, end to end with real peers: Debian's Prometheus scrapes an exporter the
// test runs and fires a rule, Debian's Alertmanager pushes the alert to the service's webhook,
// the investigation finds the cause through the estate's links, and the action path proposes,
// decides, rehearses, asks, acts through a real connector (a runbook endpoint that restarts the
// exporter, a bare git remote, Alertmanager's silences), verifies and ends mitigated or escalated
// by e-mail to a real SMTP server. Waits are real only on outside processes (Prometheus's scrape
// and rule, Alertmanager's group_wait), polled with a deadline; the service's own rules run on the
// injected clock, which the test moves. Each test ends with GET /v1/ledger/verify ok.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { MINUTE, SECOND, TestClock } from '../../host/clock.ts';
import { AutonomyRepo } from '../../host/governance/autonomy.repo.ts';
import { ALERTMANAGER_BIN, startAlertmanager, waitFor, type RunningAlertmanager } from '../helpers/alertmanager.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { family, startExporter, type Exporter } from '../helpers/exporter.ts';
import { makeHistory } from '../helpers/git-history.ts';
import { testNeeding } from '../helpers/needs.ts';
import { signedIn } from '../helpers/people.ts';
import { PROMETHEUS_BIN, startPrometheus } from '../helpers/prometheus.ts';
import { startSmtp, type ReceivedMail, type TestSmtp } from '../helpers/smtp.ts';

const OWNER = 'payments-lead@bank.example';
const APPROVER = 'approver@bank.example';
const RUNBOOK_TOKEN = 'rb-e2e-TOKEN-7c41d0a9e3b2';

const missingPrometheus = existsSync(PROMETHEUS_BIN) ? null : `${PROMETHEUS_BIN} not found (apt-get install prometheus)`;
const missingAlertmanager = existsSync(ALERTMANAGER_BIN) ? null : `${ALERTMANAGER_BIN} not found (apt-get install prometheus-alertmanager)`;
/** Both peers of the runbook scenario. */
const missingPeers = missingPrometheus ?? missingAlertmanager;

// ---- the shared steps ----------------------------------------------------------------------

/**
 * An operating install, mail to a real SMTP server, on a clock at the wall time unless given one
 * (Prometheus answers for real moments). `l2` services are granted L2 the only way there is:
 * `autonomy.json` in SERVICE_CONFIG_DIR, read at start.
 */
async function operating(
  t: ExecutionContext,
  opts: { clock?: TestClock; l2?: string[] } = {},
): Promise<{ ta: TestApp; smtp: TestSmtp; approver: string; autonomyFile: string | null }> {
  const smtp = await startSmtp(t);
  let configDir: string | null = null;
  let autonomyFile: string | null = null;
  if (opts.l2 !== undefined) {
    configDir = mkdtempSync(path.join(tmpdir(), 'oncall-e2e-config-'));
    t.teardown(() => rmSync(configDir!, { recursive: true, force: true }));
    autonomyFile = JSON.stringify({ services: Object.fromEntries(opts.l2.map((s) => [s, 'L2'])) });
    writeFileSync(path.join(configDir, 'autonomy.json'), autonomyFile);
  }
  const ta = await startApp(t, {
    clock: opts.clock ?? new TestClock(new Date()),
    env: {
      SERVICE_MAIL_CA_FILE: smtp.caFile,
      SERVICE_PUBLIC_URL: 'https://oncall.bank.example/',
      ...(configDir === null ? {} : { SERVICE_CONFIG_DIR: configDir }),
    },
  });
  await makeOperating(ta);
  const mail = await ta.call('PUT', '/v1/settings/mail', { body: { smtp_host: smtp.host, smtp_port: smtp.port, mail_from: 'oncall-service@bank.example' } });
  t.is(mail.status, 200, JSON.stringify(mail.body));
  const approver = await signedIn(ta, APPROVER, 'viewer');
  return { ta, smtp, approver, autonomyFile };
}

/** Saves a connector through the API. */
async function connector(t: ExecutionContext, ta: TestApp, name: string, kind: string, settings: Record<string, unknown>): Promise<void> {
  const r = await ta.call('PUT', `/v1/connectors/${name}`, { body: { kind, settings } });
  t.is(r.status, 201, JSON.stringify(r.body));
}

/** The estate's entry for `service`: an owner, the approver, tier 3, and `links`. */
async function estate(t: ExecutionContext, ta: TestApp, service: string, links: Array<Record<string, string>>): Promise<void> {
  const r = await ta.call('PUT', '/v1/estate/overrides', { body: { services: { [service]: { owner: OWNER, approvers: [APPROVER], tier: 3, links } } } });
  t.is(r.status, 200, JSON.stringify(r.body));
}

/** Sets the service at L1 in the database, as test/acting/acting.test.ts does (over the API a raise needs two approvers). */
async function atL1(ta: TestApp, service: string): Promise<void> {
  await ta.app.ledger.transact(async (trx) =>
    new AutonomyRepo(ta.app.db).set(trx, { service, level: 'L1', changed_at: ta.clock.now().toISOString(), changed_by: 'test', source: 'api' }),
  );
}

/** autonomy.json granted `service` L2 at start: recorded by config-file with the file's SHA-256. */
async function grantedByFile(t: ExecutionContext, ta: TestApp, service: string, file: string | null): Promise<void> {
  const changed = (await ta.call('GET', '/v1/ledger?type=governance.autonomy_changed&order=asc')).body.events as any[];
  t.like(
    changed.find((e) => e.data.service === service),
    {
      actor: 'config-file',
      data: {
        to: 'L2',
        source: 'file',
        sha256: createHash('sha256')
          .update(file ?? '')
          .digest('hex'),
      },
    },
  );
}

/** Lists `kinds` in the policy's safe_for_l2. */
async function safeForL2(t: ExecutionContext, ta: TestApp, kinds: string[]): Promise<void> {
  const { version: _v, source: _s, updated_at: _u, updated_by: _b, ...policy } = (await ta.call('GET', '/v1/policy')).body;
  const r = await ta.call('PUT', '/v1/policy', { body: { ...policy, safe_for_l2: kinds } });
  t.is(r.status, 200, JSON.stringify(r.body));
}

/** Moves the injected clock up to the wall time when it is behind (never back): the service then asks Prometheus about now. */
function catchUp(ta: TestApp): void {
  if (Date.now() > ta.clock.now().getTime()) ta.clock.set(new Date());
}

/** The debounce passes on the injected clock: the episode opens, is investigated, and its action path takes its first steps. */
async function investigated(ta: TestApp, service: string): Promise<string> {
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  await ta.app.investigation.investigations.run();
  await ta.app.acting.acting.run();
  const list = (await ta.call('GET', `/v1/episodes?query=service:${service}`)).body.episodes as any[];
  if (list.length !== 1) throw new Error(`expected one episode of ${service}, got ${JSON.stringify(list)}`);
  return list[0].id as string;
}

const episode = async (ta: TestApp, id: string) => (await ta.call('GET', `/v1/episodes/${id}`)).body;
const types = (ep: any) => (ep.timeline as any[]).map((e) => e.type as string);

async function approve(t: ExecutionContext, ta: TestApp, token: string, requestId: string): Promise<void> {
  const r = await ta.call('POST', `/v1/approvals/${requestId}/approve`, { token, body: {} });
  t.is(r.status, 200, JSON.stringify(r.body));
  t.is(r.body.approval.state, 'approved');
}

/** The first message to `to` whose subject matches, as it arrives at the SMTP server (the outbox is delivered in the background). */
function mailTo(ta: TestApp, smtp: TestSmtp, to: string, subject: RegExp): Promise<ReceivedMail> {
  return waitFor(`an e-mail to ${to} with subject ${subject}`, async () => {
    await ta.app.tick();
    return smtp.messages.find((m) => m.to.includes(to) && subject.test(m.subject));
  });
}

/** GET /v1/ledger/verify is ok, and no secret of the test is anywhere in the ledger or the logs. */
async function ledgerVerifies(t: ExecutionContext, ta: TestApp, secrets: string[] = []): Promise<void> {
  const v = await ta.call('GET', '/v1/ledger/verify');
  t.is(v.status, 200);
  t.true(v.body.ok, JSON.stringify(v.body));
  const ledger = JSON.stringify((await ta.call('GET', '/v1/ledger?order=asc&limit=2000')).body);
  for (const s of secrets) {
    t.false(ledger.includes(s), 'a secret is in the ledger');
    t.false(ta.logs.join('\n').includes(s), 'a secret is in the logs');
  }
}

/** Once the escalation is delivered (the service records it just after the SMTP server took it), the episode's outcome is `escalated`, telling `who`. */
async function escalatedTo(t: ExecutionContext, ta: TestApp, id: string, who: string): Promise<void> {
  const ep = await waitFor(`the episode to say ${who} was told`, async () => {
    const e = await episode(ta, id);
    return e.outcome === 'escalated' && (e.outcome_detail.told as string[]).includes(who) ? e : null;
  }).catch(async (e: Error) => {
    throw new Error(`${e.message}: ${JSON.stringify((await episode(ta, id)).outcome_detail)}`);
  });
  t.like(ep.outcome_detail, { value: 'escalated' });
}

type Held = { fingerprint: string; status: string; name: string; service: string | null };
const held = async (ta: TestApp) => (await ta.app.db('held_alerts').select('fingerprint', 'status', 'name', 'service')) as Held[];

/** Waits (real time: the peers' schedules) for the service to hold alert `name` with `status`. */
function holds(ta: TestApp, name: string, status: 'firing' | 'resolved', peers: () => string): Promise<Held> {
  return waitFor(`the service to hold ${name} ${status}`, async () => (await held(ta)).find((h) => h.name === name && h.status === status), 30_000).catch(
    (e: Error) => {
      throw new Error(`${e.message}\n--- service log (last 5) ---\n${ta.logs.slice(-5).join('')}\n--- peers ---\n${peers().slice(-4000)}`);
    },
  );
}

/** Alertmanager sending every alert at once to the service's webhook with the ingest token, resolved ones too. */
function webhookConfig(ta: TestApp): string {
  return `route:
  receiver: oncall
  group_by: ['alertname']
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 24h
receivers:
  - name: oncall
    webhook_configs:
      - url: '${ta.base}/v1/alerts/alertmanager'
        send_resolved: true
        http_config:
          authorization:
            type: Bearer
            credentials: '${INGEST_TOKEN}'
`;
}

// ---- 1. target-down → runbook restart -------------------------------------------------------

interface RunbookCall {
  runbook: string;
  dry_run: boolean;
  key: string;
  service: string;
  authorization: string | undefined;
}

/**
 * The runbook endpoint (a job runner standing in for Rundeck or AWX): `POST /restart` with the
 * token restarts the exporter (it answers scrapes again), unless `dry_run`; every call is kept.
 */
async function runbookEndpoint(t: ExecutionContext, exporter: Exporter): Promise<{ base: string; calls: RunbookCall[] }> {
  const calls: RunbookCall[] = [];
  const srv = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') as {
        runbook: string;
        dry_run: boolean;
        key: string;
        episode: { service: string };
      };
      calls.push({ runbook: body.runbook, dry_run: body.dry_run, key: body.key, service: body.episode.service, authorization: req.headers.authorization });
      if (req.method !== 'POST' || req.url !== '/restart' || req.headers.authorization !== `Bearer ${RUNBOOK_TOKEN}`) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end('{"error":"no"}');
        return;
      }
      if (!body.dry_run) exporter.down = false;
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ job: 'restart', dry_run: body.dry_run }));
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))));
  return { base: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, calls };
}

interface Payments {
  ta: TestApp;
  smtp: TestSmtp;
  approver: string;
  exporter: Exporter;
  runbook: { calls: RunbookCall[] };
  /** Both peers' output, for failure messages. */
  peers: () => string;
  /** The episode, once target-down held and the path took its first steps. */
  id: string;
}

/**
 * `payments` at `to`: Prometheus scrapes its exporter (job `payments`) and evaluates
 * `up{job="payments"} == 0` every second; Alertmanager pushes to the service; the estate links
 * payments to the job (through the `metrics` prometheus connector) and to the runbook `restart`
 * (through the `runbooks` http connector, whose endpoint restarts the exporter). The exporter
 * stops answering; once the service holds PaymentsDown firing, the episode is investigated.
 */
async function paymentsDown(t: ExecutionContext, to: 'shadow' | 'L1' | 'L2', opts: { safeForL2?: string[]; dryRun?: boolean } = {}): Promise<Payments> {
  const { ta, smtp, approver, autonomyFile } = await operating(t, to === 'L2' ? { l2: ['payments'] } : {});
  const exporter = await startExporter(t, () => family('payments_build_info', 'gauge', [[{ version: '1.4.2' }, 1]]));
  const runbook = await runbookEndpoint(t, exporter);
  const am = await startAlertmanager(t, webhookConfig(ta));
  const prom = await startPrometheus(t, {
    jobs: [{ job: 'payments', targets: [exporter.target] }],
    alertmanagers: [new URL(am.base).host],
    rules: `groups:
  - name: payments
    interval: 1s
    rules:
      - alert: PaymentsDown
        expr: up{job="payments"} == 0
        for: 0s
        labels:
          severity: critical
        annotations:
          summary: payments does not answer its scrapes
`,
  });
  const peers = () => `--- prometheus ---\n${prom.output()}\n--- alertmanager ---\n${am.output()}`;
  await connector(t, ta, 'metrics', 'prometheus', { url: prom.base });
  await connector(t, ta, 'runbooks', 'http', { base_url: runbook.base, runbook_token: RUNBOOK_TOKEN, runbook_dry_run: opts.dryRun ?? true });
  await estate(t, ta, 'payments', [
    { kind: 'workload', match: 'job="payments"', connector: 'metrics' },
    { kind: 'runbook', name: 'restart', connector: 'runbooks', path: '/restart' },
  ]);
  if (to === 'L1') await atL1(ta, 'payments');
  if (to === 'L2') await grantedByFile(t, ta, 'payments', autonomyFile);
  if (opts.safeForL2 !== undefined) await safeForL2(t, ta, opts.safeForL2);

  await waitFor('Prometheus to scrape payments up', async () => {
    const r = (await (await fetch(`${prom.base}/api/v1/query?query=${encodeURIComponent('up{job="payments"}')}`)).json()) as any;
    return r.data?.result?.[0]?.value?.[1] === '1';
  });
  exporter.down = true;
  const firing = await holds(ta, 'PaymentsDown', 'firing', peers);
  t.is(firing.service, 'payments', 'placed by the job label');
  catchUp(ta);
  const id = await investigated(ta, 'payments');
  return { ta, smtp, approver, exporter, runbook, peers, id };
}

/** What every runbook scenario finds: target-down holds through the workload link, and the restart runbook is proposed. */
function assertDiagnosed(t: ExecutionContext, ep: any): void {
  t.deepEqual(ep.alerts, ['PaymentsDown']);
  t.like(ep.proposal, {
    action: 'runbook',
    connector: 'runbooks',
    params: { name: 'restart', path: '/restart' },
    cause: 'prometheus/target-down',
    verify: { cause: 'prometheus/target-down', expect: 'ruled_out', after_s: 60 },
    rehearsable: true,
    reversible: false,
  });
  t.regex(ep.proposal.why, /^Scrape target down: 1 of 1 scrape targets of \{job="payments"\}/);
}

const testPeers = (title: string, fn: (t: ExecutionContext) => Promise<void>) => testNeeding(missingPeers, title, fn);

testPeers('runbook at shadow: target-down holds, the episode records "would run runbook restart", nothing runs, and the owner is e-mailed', async (t) => {
  const { ta, smtp, exporter, runbook, id } = await paymentsDown(t, 'shadow');
  const ep = await episode(ta, id);
  assertDiagnosed(t, ep);
  t.like(ep.policy_decision, { decision: 'abstain', level: 'shadow', approval: false });
  t.regex(ep.policy_decision.reason, /^shadow: would run runbook restart via runbooks; recorded, not done$/);
  t.is(ep.decision, 'abstain');
  t.is(ep.path_state, 'done');
  t.deepEqual(runbook.calls, [], 'nothing is sent to the runbook endpoint, not even a dry run');
  t.true(exporter.down);
  t.false(
    types(ep).some((x) => x.startsWith('action.') || x.startsWith('approval.')),
    types(ep).join(),
  );
  for (const k of ['check.finished', 'decision.diagnosed', 'decision.proposed', 'decision.policy', 'outcome.escalated']) t.true(types(ep).includes(k), k);

  const mail = await mailTo(ta, smtp, OWNER, /Incident escalated: payments \(PaymentsDown\)/);
  t.regex(mail.text, /would run runbook restart via runbooks/);
  t.regex(mail.text, /\*\*holds\*\* prometheus\/target-down: 1 of 1 scrape targets/);
  t.regex(mail.text, /No action was taken/);
  await escalatedTo(t, ta, id, OWNER);
  await ledgerVerifies(t, ta, [RUNBOOK_TOKEN]);
});

testPeers(
  'runbook at L1: rehearsed as a dry run, an approver approves through the API, the endpoint restarts the exporter, the alert resolves: mitigated',
  async (t) => {
    const { ta, smtp, approver, exporter, runbook, peers, id } = await paymentsDown(t, 'L1');
    let ep = await episode(ta, id);
    assertDiagnosed(t, ep);
    t.like(ep.policy_decision, { decision: 'act', level: 'L1', approval: true });
    t.like(ep.rehearsal, { ok: true });
    t.regex(ep.rehearsal.shown, /^dry run of runbook restart: HTTP 202/);
    t.is(ep.path_state, 'awaiting_approval');
    t.like(ep.approvals[0], { state: 'pending', approvers: [APPROVER], needed: 1 });
    t.deepEqual(
      runbook.calls.map((c) => [c.runbook, c.dry_run, c.service]),
      [['restart', true, 'payments']],
      'only the dry run before the approval',
    );
    t.true(exporter.down);
    const asked = await mailTo(ta, smtp, APPROVER, /Approval needed: payments/);
    t.regex(asked.text, /Approval needed: runbook on payments via runbooks: Scrape target down/);
    t.regex(asked.text, /metrics: up\{job="payments"\} @ .*: 1 of 1 targets is down/, 'the evidence, re-runnable');
    t.true(asked.text.includes(`https://oncall.bank.example/episodes/${id}`), 'a link to the episode');

    await approve(t, ta, approver, ep.approvals[0].id);
    await ta.app.acting.acting.run();
    t.deepEqual(
      runbook.calls.map((c) => [c.runbook, c.dry_run]),
      [
        ['restart', true],
        ['restart', false],
      ],
    );
    t.is(runbook.calls[1]!.authorization, `Bearer ${RUNBOOK_TOKEN}`, "the connector's token reaches the endpoint");
    t.false(exporter.down, 'the runbook restarted the exporter');
    ep = await episode(ta, id);
    t.is(ep.path_state, 'verifying');
    t.like(ep.actions[0], { connector: 'runbooks', kind: 'runbook', ok: true, reversible: false });

    // Prometheus scrapes it again, the rule resolves, Alertmanager sends the resolution.
    await holds(ta, 'PaymentsDown', 'resolved', peers);
    catchUp(ta);
    ta.clock.advance(60 * SECOND);
    await ta.app.acting.acting.run();
    ep = await episode(ta, id);
    t.is(ep.outcome, 'mitigated', JSON.stringify(ep.verification));
    t.like(ep.outcome_detail, { value: 'mitigated' });
    t.like(ep.verification, { mitigated: true, alerts_resolved: true, cause: 'prometheus/target-down', verdict: 'ruled_out' });
    const kinds = types(ep);
    for (const k of [
      'decision.proposed',
      'decision.policy',
      'action.rehearsed',
      'approval.requested',
      'approval.decided',
      'action.executed',
      'outcome.mitigated',
    ])
      t.true(kinds.includes(k), k);
    t.true(kinds.indexOf('action.executed') > kinds.indexOf('approval.decided'));
    t.false(kinds.includes('outcome.escalated'));
    t.is((await ta.call('GET', '/v1/episodes?query=outcome:mitigated')).body.episodes.length, 1);
    await ledgerVerifies(t, ta, [RUNBOOK_TOKEN]);
  },
);

testPeers('runbook at L1 under halt: the approved action is refused by the gate, nothing runs, and the owner is e-mailed', async (t) => {
  const { ta, smtp, approver, exporter, runbook, id } = await paymentsDown(t, 'L1');
  const requestId = (await episode(ta, id)).approvals[0].id;
  t.is((await ta.call('POST', '/v1/halt', { body: { by: 'owner@bank.example', reason: 'payments migration' } })).status, 200);
  await approve(t, ta, approver, requestId);
  await ta.app.acting.acting.run();
  await ta.app.governance.gate.idle();
  t.deepEqual(
    runbook.calls.map((c) => c.dry_run),
    [true],
    'the dry run only',
  );
  t.true(exporter.down);
  const ep = await episode(ta, id);
  t.is(ep.path_state, 'done');
  t.deepEqual(ep.actions ?? [], []);
  t.true(types(ep).includes('outcome.escalated'));
  const refused = (await ta.call('GET', '/v1/ledger?type=action.refused')).body.events as any[];
  t.is(refused.length, 1);
  t.like(refused[0].data, { service: 'payments', kind: 'runbook', refused: 'halted' });
  const mail = await mailTo(ta, smtp, OWNER, /Incident escalated: payments/);
  t.regex(mail.text, /the action gate refused it: every action is halted/);
  await escalatedTo(t, ta, id, OWNER);
  await ledgerVerifies(t, ta, [RUNBOOK_TOKEN]);
});

testPeers(
  'runbook at L2 granted by autonomy.json with runbook in safe_for_l2: rehearsed and run unasked, the exporter restarts, the alert resolves: mitigated',
  async (t) => {
    const { ta, runbook, exporter, peers, id } = await paymentsDown(t, 'L2', { safeForL2: ['runbook'] });
    let ep = await episode(ta, id);
    assertDiagnosed(t, ep);
    t.like(ep.policy_decision, { decision: 'act', level: 'L2', approval: false });
    t.is(ep.policy_decision.reason, 'runbook restart via runbooks at L2 without asking (the policy lists runbook as safe for L2)');
    t.deepEqual(ep.approvals, [], 'nobody is asked');
    t.false(types(ep).some((x) => x.startsWith('approval.')));
    t.is(ep.path_state, 'verifying');
    t.deepEqual(
      runbook.calls.map((c) => [c.runbook, c.dry_run]),
      [
        ['restart', true],
        ['restart', false],
      ],
      'the dry run, then the run',
    );
    t.false(exporter.down, 'the runbook restarted the exporter');
    t.like(ep.actions[0], { connector: 'runbooks', kind: 'runbook', ok: true, approval_id: null });

    await holds(ta, 'PaymentsDown', 'resolved', peers);
    catchUp(ta);
    ta.clock.advance(60 * SECOND);
    await ta.app.acting.acting.run();
    ep = await episode(ta, id);
    t.is(ep.outcome, 'mitigated', JSON.stringify(ep.verification));
    t.like(ep.verification, { mitigated: true, alerts_resolved: true, verdict: 'ruled_out' });
    await ledgerVerifies(t, ta, [RUNBOOK_TOKEN]);
  },
);

testPeers('runbook at L1 on an endpoint without dry runs: not rehearsable is no failed rehearsal; it is asked for and runs once approved', async (t) => {
  const { ta, approver, runbook, exporter, id } = await paymentsDown(t, 'L1', { dryRun: false });
  let ep = await episode(ta, id);
  t.like(ep.rehearsal, { ok: null });
  t.regex(ep.rehearsal.shown, /not rehearsable: the endpoint does not declare dry runs/);
  t.is(ep.path_state, 'awaiting_approval', 'the path goes on unrehearsed');
  t.deepEqual(runbook.calls, [], 'nothing is sent before the approval, not even a dry run');
  await approve(t, ta, approver, ep.approvals[0].id);
  await ta.app.acting.acting.run();
  t.deepEqual(
    runbook.calls.map((c) => [c.runbook, c.dry_run]),
    [['restart', false]],
  );
  t.false(exporter.down);
  ep = await episode(ta, id);
  t.like(ep.actions[0], { kind: 'runbook', ok: true });
  await ledgerVerifies(t, ta, [RUNBOOK_TOKEN]);
});

// ---- 2. recent-change → revert ------------------------------------------------------------

/** Runs git in `dir` (no system config, no signing), answering its output trimmed. */
const gitIn =
  (dir: string) =>
  (...args: string[]): string =>
    execFileSync('git', ['-c', 'commit.gpgsign=false', ...args], { cwd: dir, env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } })
      .toString()
      .trim();

test('recent-change → revert at L1: the commit of 25 minutes before, approved through the API, is reverted on oncall/revert-<sha12> of the bare remote', async (t) => {
  const clock = new TestClock('2026-11-24T09:00:00.000Z');
  const { ta, smtp, approver } = await operating(t, { clock });
  const before = (minutes: number) => new Date(clock.now().getTime() - minutes * MINUTE).toISOString();
  const history = makeHistory(t, [
    {
      at: before(180),
      author: 'Ann',
      email: 'ann@bank.example',
      subject: 'payments: v1',
      files: { 'services/payments/app.txt': 'retries 3\n', 'README.md': '# shop\n' },
    },
    { at: before(25), author: 'Bob', email: 'bob@bank.example', subject: 'payments: no retries', files: { 'services/payments/app.txt': 'retries 0\n' } },
  ]);
  const bad = history.shas[1]!;
  const remote = path.join(path.dirname(history.dir), `${path.basename(history.dir)}-remote.git`);
  t.teardown(() => rmSync(remote, { recursive: true, force: true }));
  gitIn(history.dir)('clone', '-q', '--bare', history.dir, remote);
  const git = gitIn(remote);
  const tip = git('rev-parse', 'main');
  await connector(t, ta, 'repo', 'git', { path: remote, timeout_s: 30 });
  await estate(t, ta, 'payments', [{ kind: 'repository', connector: 'repo', path: 'services/payments' }]);
  await atL1(ta, 'payments');

  const alert = (status: string) => ({ name: 'PaymentsErrors', service: 'payments', severity: 'critical', status, id: 'payments-errors' });
  t.is((await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: alert('firing') })).status, 202);
  const id = await investigated(ta, 'payments');
  let ep = await episode(ta, id);
  t.like(ep.proposal, {
    action: 'revert',
    connector: 'repo',
    params: { sha: bad, path: 'services/payments' },
    cause: 'core/recent-change',
    rehearsable: true,
    reversible: true,
  });
  t.regex(
    ep.proposal.why,
    new RegExp(`^Recent change to the service: Commit ${bad.slice(0, 12)} "payments: no retries" by Bob to repo \\(services/payments\\), 25 minutes before`),
  );
  t.like(ep.policy_decision, { decision: 'act', level: 'L1', approval: true });
  t.like(ep.rehearsal, { ok: true });
  t.regex(ep.rehearsal.shown, new RegExp(`^the revert of ${bad.slice(0, 7)}\\w* applies cleanly on main`));
  t.is(ep.path_state, 'awaiting_approval');
  t.deepEqual(git('for-each-ref', '--format=%(refname:short)', 'refs/heads/'), 'main', 'the rehearsal pushed nothing');
  await mailTo(ta, smtp, APPROVER, /Approval needed: payments/);

  await approve(t, ta, approver, ep.approvals[0].id);
  await ta.app.acting.acting.run();
  const branch = `oncall/revert-${bad.slice(0, 12)}`;
  t.deepEqual(git('for-each-ref', '--format=%(refname:short)', 'refs/heads/').split('\n').sort(), ['main', branch]);
  t.is(git('rev-parse', 'main'), tip, 'the default branch is untouched');
  t.is(git('rev-parse', `${branch}^`), tip, 'the revert sits on the tip of main');
  t.is(git('show', `${branch}:services/payments/app.txt`), 'retries 3', 'the commit is reverted');
  ep = await episode(ta, id);
  t.is(ep.path_state, 'verifying');
  t.like(ep.actions[0], { connector: 'repo', kind: 'revert', ok: true, reversible: true });
  t.regex(ep.actions[0].shown, new RegExp(`^pushed ${branch}`));

  // The alert resolves; after the remedy's wait (120 s: recent-change names none) the path ends mitigated.
  t.is((await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: alert('resolved') })).status, 202);
  ta.clock.advance(120 * SECOND);
  await ta.app.acting.acting.run();
  ep = await episode(ta, id);
  t.is(ep.outcome, 'mitigated', JSON.stringify(ep.verification));
  t.like(ep.verification, { mitigated: true, alerts_resolved: true });
  for (const k of [
    'decision.proposed',
    'decision.policy',
    'action.rehearsed',
    'approval.requested',
    'approval.decided',
    'action.executed',
    'outcome.mitigated',
  ])
    t.true(types(ep).includes(k), k);
  await ledgerVerifies(t, ta);
});

// ---- 3. flapping-alert → silence ------------------------------------------------------------

/**
 * Alertmanager's fingerprint of an alert (Prometheus's `LabelSet.Fingerprint`: FNV-1a 64 over the
 * label names in order, each name and value followed by the byte 0xff), so the history the test
 * pushes is the same alert Alertmanager sends later.
 */
function fingerprint(labels: Record<string, string>): string {
  const mask = (1n << 64n) - 1n;
  let h = 0xcbf29ce484222325n;
  const add = (bytes: Iterable<number>) => {
    for (const b of bytes) h = ((h ^ BigInt(b)) * 0x100000001b3n) & mask;
  };
  for (const k of Object.keys(labels).sort()) {
    add(Buffer.from(k, 'utf8'));
    add([0xff]);
    add(Buffer.from(labels[k]!, 'utf8'));
    add([0xff]);
  }
  return h.toString(16).padStart(16, '0');
}

const FLAPPY = { alertname: 'CheckoutLatency', service: 'checkout', severity: 'warning' };
const FLAPPY_MATCHERS = 'alertname="CheckoutLatency",service="checkout",severity="warning"';

interface Flapping {
  ta: TestApp;
  am: RunningAlertmanager;
  approver: string;
  id: string;
}

/**
 * `checkout` at `to` with an `alertmanager` connector: CheckoutLatency fires and clears ten times
 * in 20 minutes (pushed to the webhook as Alertmanager would, on the injected clock, each cleared
 * inside the debounce), then fires for real through Alertmanager; the episode is investigated.
 */
async function flapping(t: ExecutionContext, to: 'L1' | 'L2', opts: { safeForL2?: string[] } = {}): Promise<Flapping> {
  const { ta, approver, autonomyFile } = await operating(t, to === 'L2' ? { l2: ['checkout'] } : {});
  const am = await startAlertmanager(t, webhookConfig(ta));
  await connector(t, ta, 'am', 'alertmanager', { url: am.base });
  await estate(t, ta, 'checkout', []);
  if (to === 'L1') await atL1(ta, 'checkout');
  else await grantedByFile(t, ta, 'checkout', autonomyFile);
  if (opts.safeForL2 !== undefined) await safeForL2(t, ta, opts.safeForL2);
  const fp = fingerprint(FLAPPY);
  const push = async (status: 'firing' | 'resolved') => {
    const now = ta.clock.now().toISOString();
    const alert = {
      status,
      labels: FLAPPY,
      annotations: { summary: 'p99 over 800 ms' },
      startsAt: now,
      endsAt: status === 'resolved' ? now : '0001-01-01T00:00:00Z',
      fingerprint: fp,
    };
    const body = { version: '4', status, receiver: 'oncall', groupLabels: { alertname: FLAPPY.alertname }, commonLabels: FLAPPY, alerts: [alert] };
    const r = await ta.call('POST', '/v1/alerts/alertmanager', { token: INGEST_TOKEN, body });
    t.is(r.status, 202, JSON.stringify(r.body));
  };
  for (let i = 0; i < 10; i++) {
    await push('firing');
    ta.clock.advance(5 * SECOND);
    await ta.app.tick();
    await push('resolved');
    ta.clock.advance(2 * MINUTE);
    await ta.app.tick();
  }
  t.deepEqual((await ta.call('GET', '/v1/episodes')).body.episodes, [], 'each firing cleared inside the debounce');

  const posted = await fetch(`${am.base}/api/v2/alerts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([{ labels: FLAPPY, annotations: { summary: 'p99 over 800 ms' }, startsAt: new Date(Date.now() - 10_000).toISOString() }]),
  });
  t.is(posted.status, 200);
  const firing = await holds(ta, 'CheckoutLatency', 'firing', am.output);
  t.is(firing.fingerprint, fp, "the pushed history and Alertmanager's alert are one alert");
  const id = await investigated(ta, 'checkout');
  const ep = await episode(ta, id);
  t.like(ep.signals[0].baseline, { flapping: true, firings_7d: 11 });
  t.like(ep.proposal, {
    action: 'silence',
    connector: 'am',
    params: { matchers: FLAPPY_MATCHERS, duration_s: 3600 },
    cause: 'core/flapping-alert',
    rehearsable: true,
    reversible: true,
  });
  t.like(ep.rehearsal, { ok: true });
  t.regex(ep.rehearsal.shown, /^would silence 1 alert matching alertname="CheckoutLatency",service="checkout",severity="warning" for 1 h/);
  return { ta, am, approver, id };
}

type Silence = {
  id: string;
  createdBy: string;
  comment: string;
  status: { state: string };
  matchers: Array<{ name: string; value: string; isRegex: boolean; isEqual?: boolean }>;
};
const silences = async (am: RunningAlertmanager) => (await (await fetch(`${am.base}/api/v2/silences`)).json()) as Silence[];

/** The one active silence, made by the service for exactly the alert's labels, and Alertmanager mutes the alert with it. */
async function assertSilenced(t: ExecutionContext, am: RunningAlertmanager, episodeId: string): Promise<Silence> {
  const active = (await silences(am)).filter((s) => s.status.state === 'active');
  t.is(active.length, 1, JSON.stringify(active));
  const s = active[0]!;
  t.is(s.createdBy, 'oncall-service');
  t.true(s.comment.includes(`(episode ${episodeId})`), s.comment);
  t.deepEqual(
    s.matchers.map((m) => [m.name, m.value, m.isRegex, m.isEqual ?? true]).sort(),
    Object.entries(FLAPPY).map(([k, v]) => [k, v, false, true]),
  );
  const muted = await waitFor('Alertmanager to mark the alert silenced', async () => {
    const alerts = (await (await fetch(`${am.base}/api/v2/alerts`)).json()) as Array<{ status: { state: string; silencedBy: string[] } }>;
    return alerts.length === 1 && alerts[0]!.status.silencedBy.includes(s.id) ? alerts[0] : null;
  });
  t.is(muted.status.state, 'suppressed');
  return s;
}

const testAlertmanager = (title: string, fn: (t: ExecutionContext) => Promise<void>) => testNeeding(missingAlertmanager, title, fn);

testAlertmanager('flapping-alert → silence at L1: approved through the API, Alertmanager holds a silence of exactly its matchers', async (t) => {
  const { ta, am, approver, id } = await flapping(t, 'L1');
  let ep = await episode(ta, id);
  t.like(ep.policy_decision, { decision: 'act', level: 'L1', approval: true });
  t.is(ep.path_state, 'awaiting_approval');
  t.deepEqual(await silences(am), [], 'nothing before the approval');
  await approve(t, ta, approver, ep.approvals[0].id);
  await ta.app.acting.acting.run();
  const s = await assertSilenced(t, am, id);
  ep = await episode(ta, id);
  t.is(ep.path_state, 'verifying');
  t.like(ep.actions[0], { connector: 'am', kind: 'silence', ok: true, reversible: true });
  t.true(ep.actions[0].shown.endsWith(`silence ${s.id}`), ep.actions[0].shown);
  t.true(types(ep).indexOf('action.executed') > types(ep).indexOf('approval.decided'));
  await ledgerVerifies(t, ta);
});

testAlertmanager(
  'flapping-alert → silence at L2 (autonomy.json) with silence in safe_for_l2: it runs unasked, and an admin undoes it (the silence expires)',
  async (t) => {
    const { ta, am, id } = await flapping(t, 'L2', { safeForL2: ['silence'] });
    let ep = await episode(ta, id);
    t.like(ep.policy_decision, {
      decision: 'act',
      level: 'L2',
      approval: false,
      reason: 'silence via am at L2 without asking (the policy lists silence as safe for L2)',
    });
    t.is(ep.path_state, 'verifying');
    t.deepEqual(ep.approvals, []);
    t.false(types(ep).some((x) => x.startsWith('approval.')));
    const s = await assertSilenced(t, am, id);
    const undone = await ta.call('POST', `/v1/episodes/${id}/actions/1/undo`);
    t.is(undone.status, 200, JSON.stringify(undone.body));
    t.is((await silences(am)).find((x) => x.id === s.id)?.status.state, 'expired');
    ep = await episode(ta, id);
    t.true(types(ep).includes('action.undone'));
    await ledgerVerifies(t, ta);
  },
);
