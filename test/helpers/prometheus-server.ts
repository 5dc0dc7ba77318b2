// Debian's Prometheus for a test or a benchmark: started on a loopback port, stopped by its teardown.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startDaemon, type Teardowns } from './daemon.ts';
import { freePort, waitFor } from './wait.ts';

/** Debian's `prometheus` (installed by .ci/run); PROMETHEUS_BIN overrides it. */
export const PROMETHEUS_BIN = process.env.PROMETHEUS_BIN?.trim() || '/usr/bin/prometheus';

/**
 * The basic-auth user a server started with `{basicAuth: true}` lets in. The hash is bcrypt
 * (cost 10) of the password, made once with Python's `crypt.crypt(password, crypt.mksalt(
 * crypt.METHOD_BLOWFISH, rounds=1 << 10))`, so the tests need no bcrypt library.
 */
export const PROMETHEUS_USER = {
  username: 'oncall',
  password: 'prom-test-password-8f3a1c',
  bcrypt: '$2b$10$ei.D27o6vfLgEf/TSK/tYueFDnKmUJd2KRk9Ch0Tsj9LCsHI8MHJC',
} as const;

export interface RunningPrometheus {
  /** `http://127.0.0.1:<port>` */
  base: string;
  /** Everything it wrote on stdout and stderr (its logs), for failure messages. */
  output(): string;
  /**
   * Resolves once Prometheus has scraped itself (so `up` has a sample), or throws after 20 s
   * with its logs. A bounded wait on an outside process that offers nothing to await: it scrapes
   * on its own wall-clock schedule (every second), which no injected clock reaches.
   */
  firstScrape(): Promise<void>;
}

/** A scrape job of more targets (exporters a test runs), scraped every second like Prometheus itself. */
export interface ScrapeJob {
  job: string;
  /** `host:port` addresses. */
  targets: string[];
  /** Labels added to every target of the job. */
  labels?: Record<string, string>;
  /** A file holding the bearer token the job sends (`authorization.credentials_file`). */
  credentialsFile?: string;
  /** The path scraped (`metrics_path`, default /metrics) and its query parameters (`params`). */
  path?: string;
  params?: Record<string, string[]>;
  /**
   * The targets are what a blackbox exporter at `exporter` (`host:port`) probes with `module`:
   * scraped at its `/probe`, each target becoming the `instance` label, as its README configures it.
   */
  probe?: { exporter: string; module: string };
  /**
   * The job's own scrape interval in seconds (its timeout one second less), for an exporter that
   * takes longer than the global 1 s to answer when its server is down (postgres_exporter).
   */
  intervalS?: number;
}

/** The scrape settings of a blackbox exporter's job: `/probe?module=…&target=<address>`, instance = the address. */
function probeYaml(p: { exporter: string; module: string }): string {
  return (
    `    metrics_path: /probe\n    params:\n      module: ['${p.module}']\n    relabel_configs:\n` +
    `      - source_labels: [__address__]\n        target_label: __param_target\n` +
    `      - source_labels: [__param_target]\n        target_label: instance\n` +
    `      - target_label: __address__\n        replacement: '${p.exporter}'\n`
  );
}

/**
 * Starts Prometheus on a free loopback port with its TSDB in a temp dir and a minimal config
 * that scrapes itself every second (and the `jobs` given), and waits (20 s at most) for
 * `/-/ready`. With `basicAuth` every request needs PROMETHEUS_USER. With `rules` (a rule file's
 * YAML) it evaluates them every second and sends its alerts to `alertmanagers` (`host:port`).
 * It is killed and its files removed after the test, always.
 */
export async function startPrometheus(
  t: Teardowns,
  opts: { basicAuth?: boolean; targetLabels?: Record<string, string>; jobs?: ScrapeJob[]; rules?: string; alertmanagers?: string[] } = {},
): Promise<RunningPrometheus> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-prom-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const configFile = path.join(dir, 'prometheus.yml');
  const labels =
    opts.targetLabels === undefined
      ? ''
      : `\n        labels:\n${Object.entries(opts.targetLabels)
          .map(([k, v]) => `          ${k}: '${v}'`)
          .join('\n')}`;
  const scrapeAuth = opts.basicAuth ? `\n    basic_auth:\n      username: ${PROMETHEUS_USER.username}\n      password: ${PROMETHEUS_USER.password}` : '';
  const jobs = (opts.jobs ?? [])
    .map(
      (j) =>
        `  - job_name: '${j.job}'\n` +
        (j.intervalS === undefined ? '' : `    scrape_interval: ${j.intervalS}s\n    scrape_timeout: ${j.intervalS - 1}s\n`) +
        (j.credentialsFile === undefined ? '' : `    authorization:\n      type: Bearer\n      credentials_file: '${j.credentialsFile}'\n`) +
        (j.path === undefined ? '' : `    metrics_path: '${j.path}'\n`) +
        (j.params === undefined
          ? ''
          : `    params:\n${Object.entries(j.params)
              .map(([k, v]) => `      ${k}: [${v.map((x) => `'${x}'`).join(', ')}]\n`)
              .join('')}`) +
        (j.probe === undefined ? '' : probeYaml(j.probe)) +
        `    static_configs:\n      - targets: [${j.targets.map((x) => `'${x}'`).join(', ')}]` +
        (j.labels === undefined
          ? ''
          : `\n        labels:\n${Object.entries(j.labels)
              .map(([k, v]) => `          ${k}: '${v}'`)
              .join('\n')}`) +
        '\n',
    )
    .join('');
  let alerting = '';
  if (opts.rules !== undefined) {
    writeFileSync(path.join(dir, 'rules.yml'), opts.rules);
    alerting += `rule_files:\n  - '${path.join(dir, 'rules.yml')}'\n`;
  }
  if (opts.alertmanagers !== undefined && opts.alertmanagers.length > 0)
    alerting += `alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: [${opts.alertmanagers.map((x) => `'${x}'`).join(', ')}]\n`;
  writeFileSync(
    configFile,
    `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n${alerting}scrape_configs:\n  - job_name: prometheus\n    static_configs:\n      - targets: ['127.0.0.1:${port}']${labels}${scrapeAuth}\n${jobs}`,
  );
  const args = [`--config.file=${configFile}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=info'];
  if (opts.basicAuth) {
    const webFile = path.join(dir, 'web.yml');
    writeFileSync(webFile, `basic_auth_users:\n  ${PROMETHEUS_USER.username}: '${PROMETHEUS_USER.bcrypt}'\n`);
    args.push(`--web.config.file=${webFile}`);
  }
  const auth = opts.basicAuth
    ? { authorization: `Basic ${Buffer.from(`${PROMETHEUS_USER.username}:${PROMETHEUS_USER.password}`).toString('base64')}` }
    : undefined;
  const { output } = await startDaemon(t, { name: 'prometheus', bin: PROMETHEUS_BIN, args, dir, base, readyHeaders: auth });
  const firstScrape = async (): Promise<void> => {
    await waitFor('the first scrape of up', async () => {
      const r = await fetch(`${base}/api/v1/query?query=up`, { headers: auth });
      const body = (await r.json()) as { data?: { result?: unknown[] } };
      return (body.data?.result?.length ?? 0) > 0;
    }).catch((e: unknown) => {
      throw new Error(`${String(e)}\nprometheus output:\n${output()}`);
    });
  };
  return { base, output, firstScrape };
}
