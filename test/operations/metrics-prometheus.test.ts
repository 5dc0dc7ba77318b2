// The service's own metrics as its operators will watch them (issue 24): Debian's Prometheus
// scrapes GET /metrics with the metrics token and evaluates examples/prometheus/oncall-self-rules.yml,
// whose promtool unit tests pass.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MINUTE } from '../../host/clock.ts';
import { startApp } from '../helpers/app.ts';
import { ROOT } from '../helpers/cli.ts';
import { testNeeding } from '../helpers/needs.ts';
import { PROMETHEUS_BIN, startPrometheus } from '../helpers/prometheus-server.ts';
import { waitFor } from '../helpers/wait.ts';

const PROMTOOL = '/usr/bin/promtool';
const RULES = path.join(ROOT, 'examples', 'prometheus', 'oncall-self-rules.yml');
const METRICS_TOKEN = 'metrics-token-for-tests-0123456789abcdef';
const missing = (bin: string) => (existsSync(bin) ? null : `${bin} not found (apt-get install prometheus)`);

testNeeding(missing(PROMTOOL), "promtool test rules passes the unit tests of the service's own alerting rules", async (t) => {
  const r = await new Promise<{ code: number; out: string }>((resolve) =>
    execFile(PROMTOOL, ['test', 'rules', 'oncall-self-rules.test.yml'], { cwd: path.dirname(RULES), timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, out: stdout + stderr }),
    ),
  );
  t.is(r.code, 0, r.out);
  t.regex(r.out, /SUCCESS/);
});

testNeeding(
  missing(PROMETHEUS_BIN),
  "Debian's Prometheus scrapes /metrics with the metrics token and evaluates the service's own rules without error; a wrong token leaves the target down with 401",
  async (t) => {
    const ta = await startApp(t, { manualTick: true, env: { SERVICE_METRICS_TOKEN: METRICS_TOKEN } });
    // A healthy install past its first 5 minutes: this host holds the connector checks' lease.
    ta.clock.advance(5 * MINUTE);
    await ta.app.connectorChecks.runNow();
    const dir = mkdtempSync(path.join(tmpdir(), 'oncall-prom-token-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(path.join(dir, 'right'), METRICS_TOKEN, { mode: 0o600 });
    writeFileSync(path.join(dir, 'wrong'), 'not-the-metrics-token-0123456789abcdef', { mode: 0o600 });
    const target = new URL(ta.base).host;
    const prom = await startPrometheus(t, {
      jobs: [
        { job: 'oncall', targets: [target], credentialsFile: path.join(dir, 'right') },
        { job: 'oncall-wrong-token', targets: [target], credentialsFile: path.join(dir, 'wrong') },
      ],
      rules: readFileSync(RULES, 'utf8'),
    });
    const query = async (q: string) => ((await (await fetch(`${prom.base}/api/v1/query?query=${encodeURIComponent(q)}`)).json()) as any).data.result as any[];
    await waitFor('oncall scraped', async () => (await query('up{job="oncall"} == 1')).length === 1 && (await query('oncall_build_info')).length === 1).catch(
      (e: unknown) => {
        throw new Error(`${String(e)}\n${prom.output()}`);
      },
    );
    t.is((await query('oncall_ready{job="oncall"}'))[0].value[1], '1');
    // A scrape counts once answered: the next one shows it.
    await waitFor('its own scrapes counted', async () => (await query('oncall_http_requests_total{job="oncall",route="/metrics",status="200"}')).length === 1);

    const targets = ((await (await fetch(`${prom.base}/api/v1/targets`)).json()) as any).data.activeTargets as any[];
    const wrong = targets.find((x) => x.labels.job === 'oncall-wrong-token');
    t.is(wrong.health, 'down');
    t.regex(wrong.lastError, /401/);

    // Every rule has been evaluated against the real series at least once, without an error.
    const rules = await waitFor('the rules evaluated', async () => {
      const groups = ((await (await fetch(`${prom.base}/api/v1/rules`)).json()) as any).data.groups as any[];
      const all = groups.flatMap((g) => g.rules as any[]);
      return all.length > 0 && all.every((r) => r.lastEvaluation !== '0001-01-01T00:00:00Z') ? all : null;
    });
    t.is(rules.length, 9);
    for (const r of rules) t.is(r.health, 'ok', `${r.name}: ${r.lastError ?? ''}`);
    t.deepEqual(
      rules.filter((r) => r.state !== 'inactive').map((r) => r.name),
      [],
      'nothing fires on a healthy install',
    );

    // The Grafana example: every query parses and runs, and names only metrics the service exposes.
    const families = new Set(
      ((await ta.call('GET', '/metrics', { token: METRICS_TOKEN })).body as string)
        .split('\n')
        .filter((l) => l.startsWith('# TYPE '))
        .map((l) => l.split(' ')[2]),
    );
    const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'examples', 'grafana', 'oncall-dashboard.json'), 'utf8'));
    const exprs = (dashboard.panels as any[]).flatMap((p) => (p.targets as any[]).map((x) => x.expr as string));
    t.true(exprs.length >= 20);
    for (const expr of exprs) {
      for (const name of expr.match(/\b(?:oncall|process|nodejs)_[a-z0-9_]+/g) ?? [])
        t.true(families.has(name.replace(/_(bucket|sum|count)$/, '')), `${name} in ${expr}`);
      const q = expr.replaceAll('$instance', '.*').replaceAll('$__rate_interval', '1m');
      const answer = (await (await fetch(`${prom.base}/api/v1/query?query=${encodeURIComponent(q)}`)).json()) as any;
      t.is(answer.status, 'success', `${expr}: ${answer.error ?? ''}`);
    }
  },
);
