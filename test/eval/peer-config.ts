// The configuration files of the eval's Prometheus, Alertmanager and blackbox exporter.

/** How often Prometheus scrapes and evaluates rules: short, so a run takes minutes. */
export const SCRAPE_S = 5;

export interface Scraped {
  /** Each app: its job (the service's name), target, and labels added to the target. */
  apps: Array<{ job: string; target: string; labels: Record<string, string> }>;
  /** Servers beside the apps (nginx's, Redis's exporters, RabbitMQ's plugin), each a job of its own (servers.ts). */
  extra: Array<{ job: string; target: string }>;
  /** node_exporter targets, all in job `node` as operators run them. */
  nodes: string[];
  /** Health URLs the blackbox exporter probes (job `blackbox`), with labels added to the target. */
  probes: Array<{ url: string; labels: Record<string, string> }>;
  /** TLS endpoints (`host:port`) the blackbox exporter reads the certificate of (job `blackbox-tls`, module `tls_connect`). */
  tls: string[];
  blackbox: string;
  alertmanager: string;
  ruleFile: string;
}

const labelsYaml = (labels: Record<string, string>, indent: string): string =>
  Object.keys(labels).length === 0
    ? ''
    : `\n${indent}labels:\n${Object.entries(labels)
        .map(([k, v]) => `${indent}  ${k}: '${v}'`)
        .join('\n')}`;

export function prometheusYaml(s: Scraped): string {
  const apps = [...s.apps, ...s.extra.map((x) => ({ ...x, labels: {} }))]
    .map((a) => `  - job_name: '${a.job}'\n    static_configs:\n      - targets: ['${a.target}']${labelsYaml(a.labels, '        ')}\n`)
    .join('');
  const probes = s.probes.map((p) => `      - targets: ['${p.url}']${labelsYaml(p.labels, '        ')}\n`).join('');
  return `global:
  scrape_interval: ${SCRAPE_S}s
  scrape_timeout: ${SCRAPE_S - 1}s
  evaluation_interval: ${SCRAPE_S}s
rule_files:
  - '${s.ruleFile}'
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['${s.alertmanager}']
scrape_configs:
${apps}  - job_name: 'node'
    static_configs:
      - targets: [${s.nodes.map((n) => `'${n}'`).join(', ')}]
${probeJob('blackbox', 'http_2xx', probes, s.blackbox)}${s.tls.length === 0 ? '' : probeJob('blackbox-tls', 'tls_connect', `      - targets: [${s.tls.map((t) => `'${t}'`).join(', ')}]\n`, s.blackbox)}`;
}

/** A job of the blackbox exporter at `blackbox` probing with `module` what `staticConfigs` lists, each probed address its `instance`. */
function probeJob(job: string, module: string, staticConfigs: string, blackbox: string): string {
  return `  - job_name: '${job}'
    metrics_path: /probe
    params:
      module: [${module}]
    static_configs:
${staticConfigs}    relabel_configs:
      - source_labels: [__address__]
        target_label: __param_target
      - source_labels: [__param_target]
        target_label: instance
      - target_label: __address__
        replacement: '${blackbox}'
`;
}

/**
 * The blackbox exporter's modules: a GET that must answer 2xx within 2 s; and a TLS handshake
 * that reads the certificate without verifying it, so that an expired one is still read.
 */
export const BLACKBOX_YAML = `modules:
  http_2xx:
    prober: http
    timeout: 2s
    http:
      preferred_ip_protocol: ip4
  tls_connect:
    prober: tcp
    timeout: 2s
    tcp:
      tls: true
      tls_config:
        insecure_skip_verify: true
`;

/**
 * Alertmanager sending to the service's webhook with the ingest token, resolved alerts too, with
 * short group timers; the Watchdog on a route of its own that repeats every 10 s (a heartbeat).
 */
export function alertmanagerYaml(webhook: string, token: string): string {
  const receiver = `    webhook_configs:
      - url: '${webhook}'
        send_resolved: true
        http_config:
          authorization:
            type: Bearer
            credentials: '${token}'`;
  return `route:
  receiver: oncall
  group_by: ['alertname', 'job']
  group_wait: 5s
  group_interval: 10s
  repeat_interval: 1h
  routes:
    - receiver: oncall-heartbeat
      matchers: ['alertname="Watchdog"']
      group_wait: 0s
      group_interval: 5s
      repeat_interval: 10s
receivers:
  - name: oncall
${receiver}
  - name: oncall-heartbeat
${receiver}
`;
}
