// Issue 22, item 11: one escaping for every text that leaves the service. An alert whose name and
// summary carry CRLF, terminal escapes, HTML, a `javascript:` Markdown link and a direction
// override goes through the whole path (opening, diagnosis, approval request, escalation), and
// every channel gets it defused: the e-mails (a real SMTP server), the webhook and PagerDuty.
import test from 'ava';
import MarkdownIt from 'markdown-it';
import { SECOND } from '../../host/clock.ts';
import { AutonomyRepo } from '../../host/governance/autonomy.repo.ts';
import { INGEST_TOKEN, makeOperating, startApp } from '../helpers/app.ts';
import { fixVendor } from '../helpers/fix-vendor.ts';
import { oncall } from '../helpers/cli.ts';
import { signedIn } from '../helpers/people.ts';
import { receiver } from '../helpers/receiver.ts';
import { startSmtp } from '../helpers/smtp.ts';

const OWNER = 'owner@bank.example';
const ONCALL = 'oncall@bank.example';
const APPROVER = 'approver@bank.example';
const HOSTILE =
  'Evil\r\nBcc: victim@evil.example\r\n\x1b[31mRED\x1b[0m\x1b]0;pwned\x07 <img src=x onerror=alert(1)> [click](javascript:alert(1)) ![p](data:text/html,x) \u202Eexe.pdf';

/** What must never reach a reader: a control character (tab and line feed aside) or a direction override. */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;

/** Markdown rendered the most permissive way a receiver might (raw HTML and bare links on): nothing active comes out. */
function assertInert(t: import('ava').ExecutionContext, markdown: string, where: string): void {
  const html = new MarkdownIt({ html: true, linkify: true }).render(markdown);
  t.false(/<img|<script|<[^>]*onerror=/i.test(html), `${where}: no HTML from the alert (${html})`);
  t.false(/href="(?!https?:)/i.test(html), `${where}: no link but http(s)`);
  t.false(/src="/i.test(html), `${where}: no image`);
}

test('a hostile alert name and summary reach every e-mail, the webhook and PagerDuty as inert text', async (t) => {
  const smtp = await startSmtp(t);
  const v = fixVendor(t, { echo: true });
  const ta = await startApp(t, { env: { SERVICE_MAIL_CA_FILE: smtp.caFile, SERVICE_PLUGINS_DIR: v.dir, SERVICE_PUBLIC_URL: 'https://oncall.bank.example' } });
  await makeOperating(ta, OWNER);
  t.is((await ta.call('PUT', '/v1/settings/mail', { body: { smtp_host: smtp.host, smtp_port: smtp.port, mail_from: 'oncall@bank.example' } })).status, 200);
  t.is((await ta.call('POST', '/v1/people', { body: { email: ONCALL, name: 'On Call', role: 'viewer' } })).status, 201);
  const approver = await signedIn(ta, APPROVER, 'viewer');
  const hook = await receiver(t);
  const pd = await receiver(t, '/v2/enqueue');
  t.is((await ta.call('PUT', '/v1/connectors/hook', { body: { kind: 'webhook', settings: { url: hook.url, secret: 'whsec-0123456789abcdef' } } })).status, 201);
  t.is(
    (await ta.call('PUT', '/v1/connectors/pd', { body: { kind: 'pagerduty', settings: { routing_key: 'R0UTINGkey0123456789abcdef', url: pd.url } } })).status,
    201,
  );
  t.is((await ta.call('PUT', '/v1/connectors/fix', { body: { kind: 'fixer', settings: { log: v.log } } })).status, 201);
  t.is((await ta.call('PUT', '/v1/settings/notifications', { body: { recipients: [ONCALL], targets: ['hook', 'pd'] } })).status, 200);
  const estate = await ta.call('PUT', '/v1/estate/overrides', {
    body: { services: { jobs: { owner: OWNER, approvers: [APPROVER], tier: 3, links: [{ kind: 'workload', match: 'job="jobs"', connector: 'fix' }] } } },
  });
  t.is(estate.status, 200, JSON.stringify(estate.body));
  await ta.app.ledger.transact(async (trx) =>
    new AutonomyRepo(ta.app.db).set(trx, { service: 'jobs', level: 'L1', changed_at: ta.clock.now().toISOString(), changed_by: 'test', source: 'api' }),
  );

  // The hostile alert comes first, so its summary is the episode's and the rehearsal repeats it.
  const pushed = await ta.call('POST', '/v1/alerts/generic', {
    token: INGEST_TOKEN,
    body: {
      alerts: [
        { name: HOSTILE, service: 'jobs', severity: 'critical', status: 'firing', id: 'hostile', summary: HOSTILE },
        { name: 'WorkerStuck', service: 'jobs', severity: 'critical', status: 'firing', id: 'stuck' },
      ],
    },
  });
  t.is(pushed.status, 202, JSON.stringify(pushed.body));
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  await ta.app.investigation.investigations.run();
  await ta.app.acting.acting.run();
  await ta.app.notifications.run();
  const [listed] = (await ta.call('GET', '/v1/episodes')).body.episodes as any[];
  const ep = (await ta.call('GET', `/v1/episodes/${listed.id}`)).body;
  t.true(ep.alerts.includes(HOSTILE), 'the episode keeps the name as it came');
  t.is(ep.path_state, 'awaiting_approval');
  const requestId = ep.approvals[0].id as string;
  t.is((await ta.call('POST', `/v1/approvals/${requestId}/reject`, { token: approver, body: {} })).status, 200);
  await ta.app.acting.acting.run();
  await ta.app.notifications.run();

  // E-mail: opened and diagnosed (on call; gathered into one when due together), the approval
  // request (approver), the escalation (on call, owner, approver).
  const mails = smtp.messages;
  t.true(mails.length >= 5, `${mails.length} e-mails`);
  for (const m of mails) {
    const head = m.raw.slice(0, m.raw.search(/\r?\n\r?\n/));
    t.false(/^bcc:/im.test(head), 'no header comes from the alert');
    t.deepEqual(m.to.length, 1, 'one recipient per e-mail: nobody added by the alert');
    t.false(m.to.includes('victim@evil.example'));
    t.false(CONTROL.test(m.subject), `subject: ${JSON.stringify(m.subject)}`);
    t.false(/[\r\n]/.test(m.subject));
    t.false(CONTROL.test(m.text), `body: ${JSON.stringify(m.text)}`);
    t.false(/^Bcc:/m.test(m.text), 'no line of the body comes from the alert');
    t.false(m.text.includes('\u202E'));
    assertInert(t, m.text, `e-mail to ${m.to[0]}: ${m.subject}`);
  }
  const approval = mails.find((m) => m.to[0] === APPROVER && /Approval needed/.test(m.subject));
  t.truthy(approval, 'the approver was asked');
  t.regex(approval!.text, /because you are one of the approvers of jobs, and your decision is asked for\./);
  assertInert(t, approval!.text, 'approval e-mail');
  const escalations = mails.filter((m) => /Incident escalated/.test(m.subject));
  t.deepEqual(escalations.map((m) => m.to[0]).sort(), [APPROVER, ONCALL, OWNER].sort());
  for (const m of escalations) assertInert(t, m.text, `escalation to ${m.to[0]}`);
  t.regex(escalations.find((m) => m.to[0] === OWNER)!.text, /because you own jobs in the estate\./);
  t.regex(escalations.find((m) => m.to[0] === ONCALL)!.text, /because you are one of the install's on-call recipients\./);

  // The webhook: every text field one plain line; the report inert Markdown.
  const bodies = hook.got.map((g) => JSON.parse(g.body.toString('utf8')) as any);
  t.deepEqual(bodies.map((b) => b.event).sort(), ['incident.diagnosed', 'incident.escalated', 'incident.opened'].sort());
  for (const b of bodies) {
    for (const name of b.episode.alerts as string[]) t.false(CONTROL.test(name), `webhook alert name: ${JSON.stringify(name)}`);
    t.true(
      (b.episode.alerts as string[]).some((n) => n.startsWith('Evil Bcc: victim@evil.example RED <img')),
      'the name stays readable',
    );
    t.is(b.episode.because, undefined, 'why a person is e-mailed is not a target’s business');
  }
  const report = bodies.find((b) => b.event === 'incident.escalated').episode.report as string;
  t.false(CONTROL.test(report.replace(/\n/g, '')));
  assertInert(t, report, 'webhook report');
  t.regex(report, /- Alerts: Evil Bcc: victim@evil\.example RED \\<img/);
  t.regex(report, /would restart worker for Evil Bcc: victim@evil\.example RED \\<img src=x onerror=alert\(1\)\\> \\\[click\\\]\(javascript:alert\(1\)\)/);

  // PagerDuty: the summary is one plain line.
  t.true(pd.got.length >= 2);
  for (const g of pd.got) {
    const e = JSON.parse(g.body.toString('utf8'));
    if (e.event_action !== 'trigger') continue;
    t.false(CONTROL.test(e.payload.summary), `PagerDuty summary: ${JSON.stringify(e.payload.summary)}`);
    t.false(/[\r\n]/.test(e.payload.summary));
    for (const name of e.payload.custom_details.alerts as string[]) t.false(CONTROL.test(name));
  }
  t.true((await ta.app.verifyLedger()).ok);
});

test('the CLI prints a hostile alert name on one line, without its terminal escapes', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta, OWNER);
  const r = await oncall(['estate', 'resolve', JSON.stringify({ name: HOSTILE, labels: { job: 'x' } })], ta.env);
  t.is(r.code, 0, r.stderr);
  t.false(CONTROL.test(r.stdout.replace(/\n$/, '')), JSON.stringify(r.stdout));
  t.is(r.stdout.trim().split('\n').length, 1);
  t.regex(r.stdout, /^Evil Bcc: victim@evil\.example RED <img src=x onerror=alert\(1\)> .* → unknown \(none, a match\)\n$/);
});
