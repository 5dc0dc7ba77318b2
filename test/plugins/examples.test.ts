import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { alertmanagerTest, startAlertmanager, waitFor } from '../helpers/alertmanager.ts';
import { INGEST_TOKEN, makeOperating, startApp } from '../helpers/app.ts';
import { ROOT } from '../helpers/cli.ts';
import { testNeeding } from '../helpers/needs.ts';

// The README's "How alerts get in": the example configurations are valid for Debian's own tools
// and work against a real service.

const AM_EXAMPLE = path.join(ROOT, 'examples', 'alertmanager', 'alertmanager.yml');
const PROM_EXAMPLE = path.join(ROOT, 'examples', 'prometheus', 'prometheus.yml');
const RULES_EXAMPLE = path.join(ROOT, 'examples', 'prometheus', 'oncall-rules.yml');
const PUSH = path.join(ROOT, 'examples', 'curl', 'push.sh');

const tool = (bin: string, pkg: string) => (existsSync(bin) ? null : `${bin} not found (apt-get install ${pkg})`);
const AMTOOL = '/usr/bin/amtool';
const PROMTOOL = '/usr/bin/promtool';

const run = (file: string, args: string[], env: NodeJS.ProcessEnv = process.env) =>
  new Promise<{ code: number | null; out: string }>((resolve) => {
    execFile(file, args, { env, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : null, out: stdout + stderr }),
    );
  });

testNeeding(tool(AMTOOL, 'prometheus-alertmanager'), 'the Alertmanager example passes amtool check-config', async (t) => {
  const r = await run(AMTOOL, ['check-config', AM_EXAMPLE]);
  t.is(r.code, 0, r.out);
  t.regex(r.out, /SUCCESS/);
});

testNeeding(tool(PROMTOOL, 'prometheus'), 'the Prometheus example and its rule files pass promtool check config and check rules', async (t) => {
  // promtool checks that the metrics token file exists: the example is checked as installed,
  // beside its rule files, with only that file's path changed.
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-prom-example-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'oncall-metrics-token'), 'x'.repeat(40), { mode: 0o600 });
  const text = readFileSync(PROM_EXAMPLE, 'utf8');
  t.true(text.includes('credentials_file: /etc/prometheus/oncall-metrics-token'));
  writeFileSync(path.join(dir, 'prometheus.yml'), text.replaceAll('/etc/prometheus/oncall-metrics-token', path.join(dir, 'oncall-metrics-token')));
  for (const f of ['oncall-rules.yml', 'oncall-self-rules.yml']) writeFileSync(path.join(dir, f), readFileSync(path.join(path.dirname(PROM_EXAMPLE), f)));
  const config = await run(PROMTOOL, ['check', 'config', path.join(dir, 'prometheus.yml')]);
  t.is(config.code, 0, config.out);
  t.regex(config.out, /2 rule files found/);
  const rules = await run(PROMTOOL, ['check', 'rules', RULES_EXAMPLE]);
  t.is(rules.code, 0, rules.out);
  t.regex(rules.out, /SUCCESS: 3 rules found/);
});

alertmanagerTest('the Alertmanager example delivers to the service: its receiver URL, bearer token file and send_resolved as written', async (t) => {
  const text = readFileSync(AM_EXAMPLE, 'utf8');
  t.regex(text, /^ {6}- url: http:\/\/localhost:8700\/v1\/alerts\/alertmanager$/m);
  t.regex(text, /^ {8}send_resolved: true$/m);
  t.regex(text, /^ {10}authorization:\n {12}type: Bearer\n(?: {12}#.*\n)* {12}credentials_file: \/etc\/prometheus\/oncall-ingest-token$/m);

  const ta = await startApp(t);
  await makeOperating(ta);
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-example-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const tokenFile = path.join(dir, 'oncall-ingest-token');
  writeFileSync(tokenFile, INGEST_TOKEN, { mode: 0o600 });
  // Only where the service listens and where the token file is differ from the example.
  const config = text.replaceAll('http://localhost:8700', ta.base).replaceAll('/etc/prometheus/oncall-ingest-token', tokenFile);
  const am = await startAlertmanager(t, config);

  const res = await fetch(`${am.base}/api/v2/alerts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([{ labels: { alertname: 'DiskFull', severity: 'critical', service: 'payments' }, annotations: { summary: 'disk /var is 98% full' } }]),
  });
  t.is(res.status, 200);
  // group_wait is 10 s in the example.
  const held = await waitFor(
    'the service to hold the alert',
    async () => (await ta.app.db('held_alerts').select('name', 'service', 'severity', 'source', 'status')).find((r: { name: string }) => r.name === 'DiskFull'),
    40_000,
    250,
  ).catch((e: Error) => {
    throw new Error(`${e.message}\n--- alertmanager output ---\n${am.output()}`);
  });
  t.like(held, { service: 'payments', severity: 'critical', source: 'alertmanager', status: 'firing' });
  const pushed = (await ta.call('GET', '/v1/ledger?type=signal.pushed')).body.events;
  t.is(pushed[0].actor, 'ingest-token:alertmanager', 'authenticated with the ingest token from the file');
});

testNeeding(tool('/usr/bin/curl', 'curl'), 'the curl example pushes a firing alert and then its resolve', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const env = { PATH: process.env.PATH, ONCALL_URL: ta.base, SERVICE_INGEST_TOKEN: INGEST_TOKEN };
  const fired = await run(PUSH, ['firing', 'payments', 'HighErrorRate'], env);
  t.is(fired.code, 0, fired.out);
  t.like(JSON.parse(fired.out), { accepted: 1, resolved: 0 });
  const resolved = await run(PUSH, ['resolved', 'payments', 'HighErrorRate'], env);
  t.is(resolved.code, 0, resolved.out);
  t.like(JSON.parse(resolved.out), { accepted: 1, resolved: 1 });
  const rows = await ta.app.db('held_alerts').select('name', 'service', 'source', 'status');
  t.deepEqual(rows, [{ name: 'HighErrorRate', service: 'payments', source: 'curl', status: 'resolved' }]);
  const refused = await run(PUSH, [], { ...env, SERVICE_INGEST_TOKEN: 'wrong-token' });
  t.not(refused.code, 0, 'a wrong token fails the script');
  t.regex(refused.out, /unauthorized/);
});
