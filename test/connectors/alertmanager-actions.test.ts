// The `silence` action of the alertmanager connector against Debian's real Alertmanager: what a
// rehearsal lists, the silence act makes (bounded, tagged with the key, made once however often
// it is retried), and undo expiring it. Through the host's helper, as the acting area calls it.
import type { ExecutionContext } from 'ava';
import { pluginHttp } from '../../host/plugins/http-client.ts';
import { pluginLibrary } from '../../host/plugins/lib/index.ts';
import type { ConnectorContext } from '../../host/plugins/contract.ts';
import plugin from '../../plugins/connectors/alertmanager/index.ts';
import { parseMatchers as parseWith } from '../../plugins/connectors/alertmanager/matchers.ts';
import test from 'ava';
import { alertmanagerTest, startAlertmanager, type RunningAlertmanager } from '../helpers/alertmanager.ts';
import { actionHost, actionRequest } from '../helpers/connector-actions.ts';
import { silentLogger } from '../../host/log.ts';

const AM_CONFIG = `route:
  receiver: nowhere
  group_wait: 1h
receivers:
  - name: nowhere
`;

/** Every label of the first PaymentsDown alert: a silence names its alert's every label. */
const MATCHERS = 'alertname="PaymentsDown",instance="pay-1:9100",service="payments",severity="critical"';
/** Alertmanager's fingerprint of the alert with `labels`. */
const fingerprintOf = async (am: RunningAlertmanager, labels: Record<string, string>) =>
  ((await (await fetch(`${am.base}/api/v2/alerts`)).json()) as Array<{ fingerprint: string; labels: Record<string, string> }>).find(
    (a) => JSON.stringify(a.labels) === JSON.stringify(Object.fromEntries(Object.entries(labels).sort())),
  )!.fingerprint;
const PAY_1 = { alertname: 'PaymentsDown', service: 'payments', instance: 'pay-1:9100', severity: 'critical' };

async function amWithAlerts(t: ExecutionContext): Promise<RunningAlertmanager> {
  const am = await startAlertmanager(t, AM_CONFIG);
  const alerts = [
    { labels: { alertname: 'PaymentsDown', service: 'payments', instance: 'pay-1:9100', severity: 'critical' }, annotations: { summary: 'payments down' } },
    { labels: { alertname: 'PaymentsDown', service: 'payments', instance: 'pay-2:9100', severity: 'critical' } },
    { labels: { alertname: 'OrdersDown', service: 'orders', severity: 'warning' } },
  ];
  const res = await fetch(`${am.base}/api/v2/alerts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(alerts) });
  t.is(res.status, 200, await res.text());
  return am;
}

const silences = async (am: RunningAlertmanager) => (await (await fetch(`${am.base}/api/v2/silences`)).json()) as Array<Record<string, any>>;
const silence = async (am: RunningAlertmanager, id: string) => (await (await fetch(`${am.base}/api/v2/silence/${id}`)).json()) as Record<string, any>;
const unsilenced = async (am: RunningAlertmanager) =>
  ((await (await fetch(`${am.base}/api/v2/alerts?active=true&silenced=false`)).json()) as Array<{ labels: Record<string, string> }>)
    .map((a) => `${a.labels.alertname}/${a.labels.instance ?? '-'}`)
    .sort();

const silenceReq = (params: Record<string, unknown>, key = 'ep-1/silence/1') => actionRequest('silence', { alert: ALERT, ...params }, key);
/** pay-1's fingerprint, read from each test's Alertmanager (a hash of the labels: the same in every one). */
let ALERT = '0';

test('matcher lists parse like Prometheus selectors (the host parser, through ctx.lib) and refuse what would silence everything', (t) => {
  const parseMatchers = (text: string) => parseWith(pluginLibrary.matchers, text);
  t.deepEqual(parseMatchers('{alertname="A", service=~"pay.*", env!="dev",team!~"x|y"}'), {
    ok: true,
    matchers: [
      { name: 'alertname', value: 'A', isRegex: false, isEqual: true },
      { name: 'service', value: 'pay.*', isRegex: true, isEqual: true },
      { name: 'env', value: 'dev', isRegex: false, isEqual: false },
      { name: 'team', value: 'x|y', isRegex: true, isEqual: false },
    ],
  });
  t.like(parseMatchers('summary="say \\"hi\\", then go",job=api'), { ok: true, matchers: [{ value: 'say "hi", then go' }, { name: 'job', value: 'api' }] });
  for (const bad of ['', 'alertname', 'alertname=="x"', '1abc="x"', 'a="x', 'a="x" b="y"', 'env!="dev"', 'service=~".*"']) t.false(parseMatchers(bad).ok, bad);
  // What Alertmanager would refuse is refused before anything is sent: a name with a dot, an
  // expression RE2 cannot read, more than 20 matchers.
  t.like(parseMatchers('kubernetes.namespace="pay"'), {
    ok: false,
    problem: 'matchers: kubernetes.namespace is not a label name Alertmanager takes (letters, digits and _)',
  });
  t.regex((parseMatchers('service=~"("') as { problem: string }).problem, /^matchers: service=~"\(" is not a regular expression RE2 \(Prometheus\) accepts/);
  t.like(parseMatchers(Array.from({ length: 21 }, (_, i) => `l${i}="v"`).join(',')), { ok: false, problem: 'matchers: at most 20 matchers' });
  t.true(parseMatchers(Array.from({ length: 20 }, (_, i) => `l${i}="v"`).join(',')).ok);
});

alertmanagerTest('silence: rehearsal lists the one alert it would silence and changes nothing', async (t) => {
  const am = await amWithAlerts(t);
  ALERT = await fingerprintOf(am, PAY_1);
  const h = await actionHost(t, { am: { kind: 'alertmanager', settings: { url: am.base } } });
  const r = await h.connectors.rehearse('am', silenceReq({ matchers: MATCHERS, duration_s: 3600 }));
  t.like(r, { ok: true, reason: null });
  t.regex(r.shown!, /^would silence 1 alert matching alertname="PaymentsDown",instance="pay-1:9100",service="payments",severity="critical" for 1 h: /);
  t.true(r.shown!.includes('PaymentsDown{') && r.shown!.includes('instance="pay-1:9100"'));
  t.false(r.shown!.includes('pay-2') || r.shown!.includes('OrdersDown'));
  t.deepEqual(await silences(am), [], 'a rehearsal makes no silence');

  const none = await h.connectors.rehearse('am', silenceReq({ matchers: 'alertname="NoSuchAlert"', duration_s: 3600 }));
  t.like(none, { ok: false, reason: 'said_no', problem: 'no alert matches alertname="NoSuchAlert" now: the silence would cover nothing' });
  const badRegex = await h.connectors.rehearse('am', silenceReq({ matchers: 'service=~"("', duration_s: 3600 }));
  t.like(badRegex, { ok: false, reason: 'said_no' });
  // Refused before anything is sent: RE2, the engine Alertmanager reads it with, cannot read it.
  t.regex(badRegex.problem!, /^matchers: service=~"\(" is not a regular expression RE2 \(Prometheus\) accepts/);
  t.like(await h.connectors.rehearse('am', silenceReq({ matchers: 'env!="dev"', duration_s: 3600 })), { ok: false, reason: 'said_no' });
});

alertmanagerTest('silence: rehearse and act refuse a silence wider than its alert, and one for an alert this Alertmanager does not hold', async (t) => {
  const am = await amWithAlerts(t);
  ALERT = await fingerprintOf(am, PAY_1);
  const h = await actionHost(t, { am: { kind: 'alertmanager', settings: { url: am.base } } });
  // Both PaymentsDown alerts: the sibling would be silenced too.
  const wider = await h.connectors.rehearse('am', silenceReq({ matchers: 'alertname="PaymentsDown",service="payments"', duration_s: 3600 }));
  t.like(wider, { ok: false, reason: 'said_no' });
  t.regex(
    wider.problem!,
    /^alertname="PaymentsDown",service="payments" would also silence 1 other alert \(PaymentsDown\{.*instance="pay-2:9100".*\}\): a silence covers its one alert only$/,
  );
  // Only pay-1 is covered, but the matchers leave out a label it has: that is not naming the alert.
  const fewer = await h.connectors.act('am', silenceReq({ matchers: 'alertname="PaymentsDown",instance="pay-1:9100"', duration_s: 3600 }));
  t.like(fewer, { ok: false, reason: 'said_no' });
  t.regex(fewer.problem!, /leaves out labels of alert [0-9a-f]+ \(service, severity\): a silence names every label of its alert$/);
  // The orders alert's matchers with pay-1's fingerprint: the alert named does not fire under them here.
  const elsewhere = await h.connectors.act('am', silenceReq({ matchers: 'alertname="OrdersDown",service="orders",severity="warning"', duration_s: 3600 }));
  t.like(elsewhere, { ok: false, reason: 'said_no' });
  t.regex(elsewhere.problem!, new RegExp(`^alert ${ALERT} does not fire at this Alertmanager under alertname="OrdersDown"`));
  const unnamed = await h.connectors.act('am', actionRequest('silence', { matchers: MATCHERS, duration_s: 3600 }, 'ep-1/silence/1'));
  t.like(unnamed, { ok: false, reason: 'invalid_params' });
  t.deepEqual(await silences(am), [], 'no silence was made');
  t.deepEqual(await unsilenced(am), ['OrdersDown/-', 'PaymentsDown/pay-1:9100', 'PaymentsDown/pay-2:9100']);
});

alertmanagerTest('silence: act makes one bounded silence tagged with the key; a retry finds it; undo expires it', async (t) => {
  const am = await amWithAlerts(t);
  ALERT = await fingerprintOf(am, PAY_1);
  const h = await actionHost(t, { am: { kind: 'alertmanager', settings: { url: am.base } } });
  t.deepEqual(await unsilenced(am), ['OrdersDown/-', 'PaymentsDown/pay-1:9100', 'PaymentsDown/pay-2:9100']);

  const acted = await h.connectors.act('am', silenceReq({ matchers: MATCHERS, duration_s: 3600, comment: 'payments restarting' }));
  t.like(acted, { ok: true, reason: null });
  const id = acted.undo!.silence_id as string;
  t.regex(id, /^[0-9a-f-]{36}$/);
  t.deepEqual(acted.undo, { silence_id: id });
  t.regex(acted.shown!, new RegExp(`^silenced ${MATCHERS} for 1 h \\(until .+\\): silence ${id}$`));
  const made = await silence(am, id);
  t.like(made, { createdBy: 'oncall-service', status: { state: 'active' }, comment: 'payments restarting (episode ep-1) [oncall-key:ep-1/silence/1]' });
  // Alertmanager moves a start just past to its own now: the silence is duration_s long, less the request's time.
  const long = Date.parse(made.endsAt) - Date.parse(made.startsAt);
  t.true(long > 3540_000 && long <= 3600_000, `duration_s long (${long} ms)`);
  t.deepEqual(
    made.matchers.map((m: Record<string, unknown>) => [m.name, m.value, m.isRegex, m.isEqual]),
    [
      ['alertname', 'PaymentsDown', false, true],
      ['instance', 'pay-1:9100', false, true],
      ['service', 'payments', false, true],
      ['severity', 'critical', false, true],
    ],
  );
  t.deepEqual(await unsilenced(am), ['OrdersDown/-', 'PaymentsDown/pay-2:9100'], 'the one payments alert is silenced, the others not');

  // A retry (a host restarted mid-call) finds the silence instead of making a second.
  const again = await h.connectors.act('am', silenceReq({ matchers: MATCHERS, duration_s: 3600, comment: 'payments restarting' }));
  t.like(again, { ok: true, undo: { silence_id: id } });
  t.regex(again.shown!, /exists already for this action/);
  t.like(await h.connectors.rehearse('am', silenceReq({ matchers: MATCHERS, duration_s: 3600 })), { ok: true });
  t.is((await silences(am)).length, 1, 'one silence, however often act is called');
  // Another action (another key) is another silence.
  const other = await h.connectors.act('am', silenceReq({ matchers: MATCHERS, duration_s: 600 }, 'ep-2/silence/1'));
  t.not(other.undo!.silence_id, id);
  t.is((await silences(am)).length, 2);

  const undone = await h.connectors.undo('am', { ...silenceReq({ matchers: MATCHERS, duration_s: 3600 }), undo: { silence_id: id } });
  t.like(undone, { ok: true, shown: `expired silence ${id}` });
  t.is((await silence(am, id)).status.state, 'expired');
  t.like(await h.connectors.undo('am', { ...silenceReq({ matchers: MATCHERS, duration_s: 3600 }), undo: { silence_id: id } }), {
    ok: true,
    shown: `silence ${id} has already expired`,
  });
  // The other action's silence is not this action's to expire.
  const foreign = await h.connectors.undo('am', { ...silenceReq({ matchers: MATCHERS, duration_s: 3600 }), undo: { silence_id: other.undo!.silence_id } });
  t.like(foreign, { ok: false, reason: 'said_no' });
  t.regex(foreign.problem!, /was not made by this action/);
  t.is((await silence(am, other.undo!.silence_id as string)).status.state, 'active');
});

alertmanagerTest('silence: never longer than 24 h, and never a silence of a person', async (t) => {
  const am = await amWithAlerts(t);
  ALERT = await fingerprintOf(am, PAY_1);
  const h = await actionHost(t, { am: { kind: 'alertmanager', settings: { url: am.base } } });
  t.like(await h.connectors.act('am', silenceReq({ matchers: MATCHERS, duration_s: 86_401 })), {
    ok: false,
    reason: 'invalid_params',
    problem: 'params.duration_s must be <= 86400',
  });
  t.like(await h.connectors.act('am', silenceReq({ matchers: MATCHERS, duration_s: 59 })), { ok: false, reason: 'invalid_params' });
  // The plugin refuses on its own too, whoever calls it.
  const settings = Object.freeze({ url: am.base });
  const ctx: ConnectorContext = { log: silentLogger() as never, settings, http: pluginHttp({ settings, secrets: [] }), lib: pluginLibrary };
  t.like(await plugin.act!(ctx, silenceReq({ matchers: MATCHERS, duration_s: 90_000 })), {
    ok: false,
    problem: 'duration_s must be a whole number of seconds from 60 to 86400 (24 h)',
  });
  t.deepEqual(await silences(am), []);

  // A person's silence with the same matchers is never taken for this action's, nor expired by its undo.
  const res = await fetch(`${am.base}/api/v2/silences`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      matchers: [
        { name: 'alertname', value: 'PaymentsDown', isRegex: false, isEqual: true },
        { name: 'instance', value: 'pay-1:9100', isRegex: false, isEqual: true },
        { name: 'service', value: 'payments', isRegex: false, isEqual: true },
        { name: 'severity', value: 'critical', isRegex: false, isEqual: true },
      ],
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 3600_000).toISOString(),
      createdBy: 'alice',
      comment: 'maintenance [oncall-key:ep-1/silence/1]',
    }),
  });
  const personal = ((await res.json()) as { silenceID: string }).silenceID;
  const acted = await h.connectors.act('am', silenceReq({ matchers: MATCHERS, duration_s: 600 }));
  t.true(acted.ok);
  t.not(acted.undo!.silence_id, personal);
  t.like(await h.connectors.undo('am', { ...silenceReq({ matchers: MATCHERS, duration_s: 600 }), undo: { silence_id: personal } }), { ok: false });
  t.is((await silence(am, personal)).status.state, 'active');
});
