import test, { type ExecutionContext } from 'ava';
import { SECOND } from '../../host/clock.ts';
import { AutonomyRepo } from '../../host/governance/autonomy.repo.ts';
import type { Level } from '../../host/governance/levels.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { ARTIFACTS, browserAs, browserTest, closeBrowser, consoleBuilt, heading, visited as pageVisited, type BrowserPage } from '../helpers/browser.ts';
import { acted, fixVendor } from '../helpers/fix-vendor.ts';
import { signedIn } from '../helpers/people.ts';

/*
 * The episode page's "Action" section in a real browser (Debian's Chromium through
 * playwright-core) against the whole service: a vendor's pack proposes `restart` for service
 * `jobs`, a vendor's connector performs it (test/helpers/fix-vendor.ts), the estate names
 * approver@bank.example as the approver of `jobs`. At L1 the approver sees Approve / Reject and
 * nobody else does; approving runs the action and the page follows the path to mitigated
 * without a reload; an admin undoes it. At shadow the page says what would run and offers no
 * button. Screenshots go to test/artifacts/, axe-core checks each page. See docs/console.md,
 * "/episodes/<id>".
 */

test.after.always(closeBrowser);

/**
 * How long the page may take to show a change: the 1 s head poll plus the reads, and the acting
 * pass, on a loaded machine (5 s was once too short; no reload either way).
 */
const LIVE_MS = 10_000;

const APPROVER = 'approver@bank.example';

interface Setup {
  ta: TestApp;
  log: string;
  id: string;
  /** The approver's session (a viewer: an approver decides whatever their role). */
  approver: string;
}

/** An operating install at `level` for `jobs`, its alert fired, investigated and the path's first steps taken. */
async function diagnosed(t: ExecutionContext, level: Level, vendor: Parameters<typeof fixVendor>[1] = {}): Promise<Setup> {
  await consoleBuilt();
  const v = fixVendor(t, vendor);
  const ta = await startApp(t, { env: { SERVICE_PLUGINS_DIR: v.dir } });
  await makeOperating(ta);
  const approver = await signedIn(ta, APPROVER, 'viewer');
  t.is((await ta.call('PUT', '/v1/connectors/fix', { body: { kind: 'fixer', settings: { log: v.log } } })).status, 201);
  const put = await ta.call('PUT', '/v1/estate/overrides', {
    body: {
      services: {
        jobs: { owner: 'owner@bank.example', approvers: [APPROVER], tier: 3, links: [{ kind: 'workload', match: 'job="jobs"', connector: 'fix' }] },
      },
    },
  });
  t.is(put.status, 200, JSON.stringify(put.body));
  await ta.app.ledger.transact(async (trx) =>
    new AutonomyRepo(ta.app.db).set(trx, { service: 'jobs', level, changed_at: ta.clock.now().toISOString(), changed_by: 'test', source: 'api' }),
  );
  await fire(ta, 'firing');
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  await ta.app.investigation.investigations.run();
  await ta.app.acting.acting.run();
  const list = (await ta.call('GET', '/v1/episodes?query=service:jobs')).body.episodes as Array<{ id: string }>;
  t.is(list.length, 1);
  return { ta, log: v.log, id: list[0]!.id, approver };
}

async function fire(ta: TestApp, status: 'firing' | 'resolved'): Promise<void> {
  const r = await ta.call('POST', '/v1/alerts/generic', {
    token: INGEST_TOKEN,
    body: { name: 'WorkerStuck', service: 'jobs', severity: 'critical', status, id: 'jobs-stuck', summary: 'the jobs worker is stuck' },
  });
  if (r.status !== 202) throw new Error(`alert: ${r.status} ${JSON.stringify(r.body)}`);
}

/** The episode page for `token`, its Action section shown. */
async function opened(t: ExecutionContext, s: Setup, token: string): Promise<BrowserPage> {
  const bp = await browserAs(t, s.ta.base, token);
  await bp.page.goto(`${s.ta.base}/episodes/${s.id}`);
  await heading(bp, 'Incident: jobs').waitFor();
  await section(bp).waitFor();
  return bp;
}

const section = (bp: BrowserPage) => bp.page.locator('section[aria-labelledby="action-heading"]');
/** The step of the path headed `name`. */
const step = (bp: BrowserPage, name: string) =>
  section(bp)
    .locator('li.step')
    .filter({ has: bp.page.getByRole('heading', { level: 3, name, exact: true }) });
const h2s = (bp: BrowserPage) => bp.page.locator('main h2').allInnerTexts();

/** The page as it is (a full-page screenshot and axe), and the Action section alone in `<name>-action.png`, large enough to read. */
async function visited(t: ExecutionContext, bp: BrowserPage, name: string): Promise<void> {
  await pageVisited(t, bp, name);
  await section(bp).screenshot({ path: `${ARTIFACTS}${name}-action.png` });
}

/** Elements of the Action section wider than the window (at 400 px: none may be). */
async function overflowing(bp: BrowserPage): Promise<string[]> {
  return bp.page.evaluate(() => {
    const d = (globalThis as any).document;
    const w = (globalThis as any).innerWidth as number;
    return [...d.querySelectorAll('section[aria-labelledby="action-heading"] *')]
      .filter((el: any) => el.getBoundingClientRect().right > w + 1)
      .slice(0, 5)
      .map((el: any) => `${el.tagName.toLowerCase()}.${el.className} ${Math.round(el.getBoundingClientRect().right)} ${String(el.textContent).slice(0, 60)}`);
  });
}

browserTest(
  'an L1 path awaiting approval offers Approve and Reject to its approver only; approving runs the action, and the page follows it to mitigated; an admin undoes it',
  async (t) => {
    const s = await diagnosed(t, 'L1');
    const { ta, log, id } = s;
    const api = (await ta.call('GET', `/v1/episodes/${id}`)).body;
    t.is(api.path_state, 'awaiting_approval');
    t.deepEqual(acted(log), [], 'nothing runs before the approval');

    const approver = await opened(t, s, s.approver);
    const { page } = approver;
    // After the diagnosis and before the alerts: what the service did about it.
    const sections = await h2s(approver);
    t.deepEqual(sections.slice(0, 2), ['Diagnosis', 'What holds, and the evidence']);
    t.deepEqual(
      sections.slice(sections.indexOf('Action')),
      ['Action', 'Alerts', 'Data', 'Decision and outcome', 'Timeline'],
      'the findings (the shipped packs add more) come first',
    );
    t.is(await section(approver).getByRole('status').first().innerText(), 'Waiting for approval: nothing runs until an approver approves.');
    t.deepEqual(await section(approver).locator('li.step h3').allInnerTexts(), ['Proposal', 'Policy decision', 'Rehearsal', 'Approval']);

    // The proposal: action, connector, parameters, why, undo, verification.
    const proposal = await step(approver, 'Proposal').innerText();
    t.regex(proposal, /restart via fix/);
    t.regex(proposal, /Parameters\s+\{"target":"worker"\}/);
    t.regex(proposal, /Why\s+The worker is stuck: the worker is stuck \(cause fixpack\/stuck\)/);
    t.regex(proposal, /Undo\s+undo the restart through fix/);
    t.regex(proposal, /Verified by\s+fixpack\/stuck should be ruled out 60\s+s after the action/);
    // The policy decision: act, the reason, the level, each check passed or failed in words.
    const policy = step(approver, 'Policy decision');
    t.regex(await policy.innerText(), /● act/);
    t.regex(await policy.innerText(), /restart via fix, once approved \(at L1 every action is approved first\)/);
    t.regex(await policy.innerText(), /Level\s+L1/);
    const checks = await policy.getByRole('list', { name: 'The checks of the policy decision' }).locator('li').allInnerTexts();
    t.is(checks.length, api.policy_decision.checks.length);
    t.true(checks.some((c) => /autonomy passed: L1/.test(c)));
    t.true(checks.some((c) => /halt passed: not halted/.test(c)));
    // The rehearsal and the request.
    t.regex(await step(approver, 'Rehearsal').innerText(), /✓ rehearsed[\s\S]*would restart worker/);
    const approval = step(approver, 'Approval');
    t.regex(await approval.innerText(), /◷ waiting for a decision/);
    t.regex(await approval.innerText(), /Approvers\s+approver@bank\.example/);
    t.regex(await approval.innerText(), /Needed\s+0 of 1 approval/);
    t.regex(await approval.innerText(), new RegExp(`Expires\\s+.*UTC`));
    t.is(await approval.getByRole('button', { name: 'Approve' }).count(), 1, 'the approver is offered Approve');
    t.is(await approval.getByRole('button', { name: 'Reject' }).count(), 1, 'and Reject');
    t.is(await section(approver).getByRole('button', { name: 'Undo…' }).count(), 0);
    t.is(await page.getByRole('region', { name: 'Halt switch' }).count(), 1, 'the halt switch stays on the page');
    await visited(t, approver, 'e2e-acting-1-awaiting-approval');

    // Another viewer, and an admin who is not an approver, see the request but no buttons.
    const viewer = await opened(t, s, await signedIn(ta, 'vera@bank.example', 'viewer'));
    const admin = await opened(t, s, await signedIn(ta, 'admin2@bank.example', 'admin'));
    for (const other of [viewer, admin]) {
      await step(other, 'Approval').waitFor();
      t.is(await section(other).getByRole('button').count(), 0, 'no Approve, Reject or Undo for someone not an approver');
      t.regex(await step(other, 'Approval').innerText(), /Only the approvers named above decide it\./);
    }
    await visited(t, viewer, 'e2e-acting-2-not-an-approver');
    // The same request on Control: who decides it, a link to its incident, no buttons for someone else.
    await viewer.page.getByRole('link', { name: 'Control', exact: true }).click();
    await heading(viewer, 'Control').waitFor();
    await viewer.page.getByText('Only the approvers of jobs decide this: approver@bank.example.').waitFor();
    t.is(await viewer.page.getByRole('link', { name: 'The incident this action is for' }).getAttribute('href'), `/episodes/${id}`);
    t.is(await viewer.page.getByRole('button', { name: 'Approve' }).count(), 0);
    await pageVisited(t, viewer, 'e2e-acting-2-control');

    // The approver approves: the answer is said, the action runs and the page shows it executed.
    await approval.getByRole('button', { name: 'Approve' }).click();
    await section(approver).getByRole('status').filter({ hasText: 'Approved: the action runs now, through the action gate.' }).waitFor();
    await step(approver, 'Action').getByText('✓ executed').waitFor({ timeout: LIVE_MS });
    t.deepEqual(acted(log), ['restart worker']);
    const action = await step(approver, 'Action').innerText();
    t.regex(action, /Ran\s+restart via fix \{"target":"worker"\}/);
    t.regex(action, /It showed\s+restarted worker/);
    t.regex(action, /Undo\s+can be undone/);
    t.regex(await step(approver, 'Approval').innerText(), /✓ approved/);
    t.regex(await step(approver, 'Approval').innerText(), /approved by approver@bank\.example/);
    t.is(await step(approver, 'Approval').getByRole('button').count(), 0, 'a decided request offers nothing');
    t.regex(await step(approver, 'Verification').innerText(), /◷ waiting: re-checks fixpack\/stuck and the alerts at/);
    t.is(await section(approver).getByRole('button', { name: 'Undo…' }).count(), 0, 'a viewer is not offered Undo');
    await visited(t, approver, 'e2e-acting-3-executed');
    // The other pages follow without a reload; the admin is offered Undo.
    await step(admin, 'Action').getByText('✓ executed').waitFor({ timeout: LIVE_MS });
    t.is(await step(admin, 'Action').getByRole('button', { name: 'Undo…' }).count(), 1);

    // The alert resolves; after the remedy's wait the verification finds the cause ruled out: mitigated.
    await fire(ta, 'resolved');
    ta.clock.advance(60 * SECOND);
    await ta.app.acting.acting.run();
    await step(approver, 'Outcome').waitFor({ timeout: LIVE_MS });
    t.regex(
      await step(approver, 'Verification').innerText(),
      /✓ it worked[\s\S]*Re-checked\s+fixpack\/stuck: ruled out \(expected ruled out\)[\s\S]*Alerts\s+all resolved/,
    );
    t.regex(await step(approver, 'Outcome').innerText(), /✓ mitigated[\s\S]*mitigated by restart via fix/);
    t.is(await section(approver).getByRole('status').first().innerText(), 'Done: mitigated.');
    t.is((await ta.call('GET', `/v1/episodes/${id}`)).body.outcome, 'mitigated');
    await visited(t, approver, 'e2e-acting-4-mitigated');

    // A phone's width: every step readable, nothing wider than the screen.
    await page.setViewportSize({ width: 400, height: 900 });
    await visited(t, approver, 'e2e-acting-5-narrow');
    t.deepEqual(await overflowing(approver), [], 'nothing wider than the screen');

    // The admin undoes it: asked once more, then through the gate; the page says so.
    await step(admin, 'Outcome').waitFor({ timeout: LIVE_MS });
    await step(admin, 'Action').getByRole('button', { name: 'Undo…' }).click();
    await step(admin, 'Action').getByRole('button', { name: 'Undo restart now' }).click();
    await step(admin, 'Action').getByRole('status').filter({ hasText: 'Undone: restart via fix was reversed.' }).waitFor();
    await step(admin, 'Action')
      .getByText(/undone .* UTC/)
      .waitFor({ timeout: LIVE_MS });
    t.regex(await step(admin, 'Action').innerText(), /Undo\s+↶ undone .* UTC by admin2@bank\.example/);
    t.is(await step(admin, 'Action').getByRole('button').count(), 0, 'undone once');
    t.deepEqual(acted(log), ['restart worker', 'undo worker']);
    await visited(t, admin, 'e2e-acting-6-undone');

    for (const bp of [approver, viewer, admin]) t.deepEqual(bp.problems, []);
    t.true((await ta.app.verifyLedger()).ok);
  },
);

browserTest("a connector that cannot rehearse with its settings: the page says not rehearsed and gives the connector's reason", async (t) => {
  const s = await diagnosed(t, 'L1', { notRehearsable: true });
  const { ta, id } = s;
  const api = (await ta.call('GET', `/v1/episodes/${id}`)).body;
  t.is(api.path_state, 'awaiting_approval', 'no failure: the path goes on to the approval');
  t.is(api.rehearsal.ok, null);
  t.is(api.rehearsal.shown, 'dry runs are off in its settings');

  const bp = await opened(t, s, s.approver);
  t.deepEqual(await section(bp).locator('li.step h3').allInnerTexts(), ['Proposal', 'Policy decision', 'Rehearsal', 'Approval']);
  const rehearsal = await step(bp, 'Rehearsal').innerText();
  t.regex(rehearsal, /^Rehearsal\s+not rehearsed · .*UTC/);
  t.regex(rehearsal, /fix did not rehearse restart: dry runs are off in its settings/);
  t.notRegex(rehearsal, /Not rehearsed\.|failed/);
  t.is(await step(bp, 'Approval').getByRole('button', { name: 'Approve' }).count(), 1, 'the approver is still asked');
  await visited(t, bp, 'e2e-acting-9-not-rehearsable');
  t.deepEqual(bp.problems, []);
});

browserTest('a shadow path shows what would run, offers no button, and says it was escalated', async (t) => {
  const s = await diagnosed(t, 'shadow');
  const { ta, log, id } = s;
  t.is((await ta.call('GET', `/v1/episodes/${id}`)).body.path_state, 'done');

  // Even the service's approver gets no button: nothing was asked.
  const bp = await opened(t, s, s.approver);
  t.deepEqual(await section(bp).locator('li.step h3').allInnerTexts(), ['Proposal', 'Policy decision', 'Action', 'Outcome']);
  const policy = await step(bp, 'Policy decision').innerText();
  t.regex(policy, /○ abstain/);
  t.regex(policy, /shadow: would run restart via fix; recorded, not done/);
  t.regex(policy, /Level\s+shadow/);
  t.regex(policy, /autonomy failed: shadow: records what it would do, never acts/);
  const action = await step(bp, 'Action').innerText();
  t.regex(action, /○ not taken/);
  t.regex(action, /Would run: restart via fix with \{"target":"worker"\}\. Nothing was done\./);
  t.regex(await step(bp, 'Outcome').innerText(), /⚠ escalated[\s\S]*shadow: would run restart via fix/);
  // No mail is configured here: the escalation is queued for the owner and the approver, not delivered.
  t.not((await ta.call('GET', `/v1/episodes/${id}`)).body.outcome, 'escalated');
  t.regex(
    await step(bp, 'Outcome').innerText(),
    /To be told: owner@bank\.example, approver@bank\.example\. Not delivered yet: see “Decision and outcome” below\./,
  );
  t.is(await section(bp).getByRole('button').count(), 0, 'no Approve, Reject or Undo');
  // The status line agrees with the outcome: nobody has been reached yet, so it does not say "escalated to people".
  t.is(
    await section(bp).getByRole('status').first().innerText(),
    'Done: people are to be told, not yet reached (telling owner@bank.example, approver@bank.example: not delivered yet).',
  );
  t.deepEqual(acted(log), [], 'nothing ran');
  await visited(t, bp, 'e2e-acting-7-shadow');

  await bp.page.setViewportSize({ width: 400, height: 900 });
  await visited(t, bp, 'e2e-acting-8-shadow-narrow');
  t.deepEqual(await overflowing(bp), [], 'nothing wider than the screen');
  t.deepEqual(bp.problems, []);
});
