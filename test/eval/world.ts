/**
 * Everything one run of the eval runs on, on loopback: the services' apps (test/eval/app.ts), their
 * hosts' node_exporters (node-host.ts), TLS endpoints (tls-endpoint.ts), Debian's blackbox exporter, Prometheus (scraping every 5 s,
 * evaluating rules.ts) and Alertmanager (pushing to the service's webhook), and the git
 * repositories the apps' config comes from. `plan` picks ports and makes the repositories;
 * `start` starts the peers once the service listens (Alertmanager needs its address).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { TestCa } from '../helpers/certs.ts';
import { startDaemon } from '../helpers/daemon.ts';
import { AppProcess } from './app-process.ts';
import { ALERTMANAGER_BIN, BLACKBOX_BIN, PROMETHEUS_BIN } from './bins.ts';
import { NodeHost } from './node-host.ts';
import { onFreePort } from './ports.ts';
import { alertmanagerYaml, BLACKBOX_YAML, prometheusYaml } from './peer-config.ts';
import { Repo } from './repo.ts';
import { appJob, ServerPeers } from './servers.ts';
import { rulesYaml } from './rules.ts';
import type { ServiceSpec, World } from './scenarios.ts';
import type { Stack } from './stack.ts';
import { TlsEndpoint } from './tls-endpoint.ts';

/** The connectors the service is given. */
export const CONNECTORS = { metrics: 'prom', alerts: 'am', platform: 'platform-repo', chat: 'oncall-chat' } as const;
/** A repository connector of a service with a repository of its own. */
export const ownRepoConnector = (service: string): string => `${service}-repo`;
/** How long before the run the repositories' first commit is dated: outside every check's window. */
const HISTORY_H = 3;

/** The peers' ports, known once each listens. */
interface Ports {
  chat: number | null;
  blackbox: number | null;
  prometheus: number | null;
  alertmanager: number | null;
}

export class EvalWorld implements World {
  readonly facts = new Map<string, string>();
  /** Messages the on-call chat received. */
  told = 0;
  readonly services: readonly ServiceSpec[];
  readonly platform: Repo;
  readonly #dir: string;
  readonly #t: Stack;
  readonly #apps = new Map<string, AppProcess>();
  readonly #hosts = new Map<string, NodeHost>();
  readonly #own = new Map<string, Repo>();
  /** TLS endpoints of the services that have one, and the CA their certificates come from. */
  readonly #tls = new Map<string, TlsEndpoint>();
  #ca: TestCa | null = null;
  readonly #ports: Ports = { chat: null, blackbox: null, prometheus: null, alertmanager: null };
  /** nginx, Redis and RabbitMQ beside some services' apps (servers.ts). */
  readonly #servers: ServerPeers;
  #ingest: { base: string; token: string } | null = null;

  private constructor(t: Stack, dir: string, services: ServiceSpec[], platform: Repo) {
    this.#t = t;
    this.#dir = dir;
    this.services = services;
    this.platform = platform;
    this.#servers = new ServerPeers(t);
  }

  /** Repositories made (first commit 3 h back), processes prepared but not started. */
  static async plan(t: Stack, dir: string, services: ServiceSpec[]): Promise<EvalWorld> {
    const at = new Date(Date.now() - HISTORY_H * 3600_000);
    const config = `${JSON.stringify({ error_ratio: 0 }, null, 2)}\n`;
    const shared = services.filter((s) => s.ownRepo !== true);
    const platform = Repo.create(dir, 'platform', Object.fromEntries(shared.map((s) => [`services/${s.name}/config.json`, config])), at);
    const w = new EvalWorld(t, dir, services, platform);
    for (const s of services) {
      if (s.ownRepo === true) w.#own.set(s.name, Repo.create(dir, s.name, { 'config.json': config }, at));
      w.#apps.set(s.name, new AppProcess(t, s.name, w.repoOf(s.name).file(w.configIn(s.name))));
      if (s.host !== undefined) w.#hosts.set(s.name, new NodeHost(t, s.name));
      if (s.tls !== undefined) w.#tls.set(s.name, new TlsEndpoint(t, s.name, (w.#ca ??= new TestCa(t)), s.tls.days));
    }
    return w;
  }

  app(name: string): AppProcess {
    const a = this.#apps.get(name);
    if (a === undefined) throw new Error(`no app ${name}`);
    return a;
  }

  host(name: string): NodeHost {
    const h = this.#hosts.get(name);
    if (h === undefined) throw new Error(`no host of ${name}`);
    return h;
  }

  tls(name: string): TlsEndpoint {
    const e = this.#tls.get(name);
    if (e === undefined) throw new Error(`no TLS endpoint of ${name}`);
    return e;
  }

  repoOf(name: string): Repo {
    return this.#own.get(name) ?? this.platform;
  }

  configIn(name: string): string {
    return this.#own.has(name) ? 'config.json' : `services/${name}/config.json`;
  }

  healthUrl(name: string): string {
    return this.#servers.healthUrl(name) ?? `${this.app(name).base}/health`;
  }

  fillRedis(name: string, bytes: number): Promise<void> {
    return this.#servers.fillRedis(name, bytes);
  }

  fillRedisTo(name: string, ratio: number): Promise<void> {
    return this.#servers.fillRedisTo(name, ratio);
  }

  stopConsumer(name: string): Promise<void> {
    return this.#servers.stopConsumer(name);
  }

  holdLock(name: string): Promise<void> {
    return this.#servers.holdLock(name);
  }

  get prometheus(): string {
    return this.#address('prometheus');
  }

  get alertmanager(): string {
    return this.#address('alertmanager');
  }

  #address(peer: keyof Ports): string {
    const port = this.#ports[peer];
    if (port === null) throw new Error(`${peer} has not started yet`);
    return `http://127.0.0.1:${port}`;
  }

  /** Starts the apps, their hosts, the servers beside them and the on-call chat: their addresses are known from then on (the estate's links). */
  async startServices(): Promise<void> {
    await this.#chat();
    await Promise.all([
      ...[...this.#apps.values()].map((a) => a.start()),
      ...this.services.flatMap((s) => (s.host === undefined ? [] : [this.host(s.name).start(s.host.used)])),
      ...[...this.#tls.values()].map((e) => e.start()),
    ]);
    await this.#servers.start(this.services, (name) => `127.0.0.1:${this.app(name).port}`);
  }

  /** Starts the blackbox exporter, Alertmanager (pushing to `ingest.base` with `ingest.token`) and Prometheus. */
  async startMonitoring(ingest: { base: string; token: string }): Promise<void> {
    this.#ingest = ingest;
    await this.#daemon('blackbox', BLACKBOX_BIN, (dir) => {
      writeFileSync(path.join(dir, 'blackbox.yml'), BLACKBOX_YAML);
      return [`--config.file=${path.join(dir, 'blackbox.yml')}`];
    });
    await this.#daemon('alertmanager', ALERTMANAGER_BIN, (dir) => {
      writeFileSync(path.join(dir, 'alertmanager.yml'), alertmanagerYaml(`${ingest.base}/v1/alerts/alertmanager`, ingest.token));
      return [`--config.file=${path.join(dir, 'alertmanager.yml')}`, `--storage.path=${path.join(dir, 'data')}`, '--cluster.listen-address='];
    });
    await this.#daemon('prometheus', PROMETHEUS_BIN, (dir) => {
      writeFileSync(this.#ruleFile, rulesYaml({ watchdog: true }));
      writeFileSync(path.join(dir, 'prometheus.yml'), prometheusYaml(this.#scraped()));
      // A short resend delay: an alert Prometheus stops sending ends in Alertmanager within 20 s, not 4 minutes.
      return [
        `--config.file=${path.join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        '--web.enable-lifecycle',
        '--rules.alert.resend-delay=5s',
      ];
    });
  }

  async reloadRules(o: { watchdog: boolean }): Promise<void> {
    writeFileSync(this.#ruleFile, rulesYaml(o));
    const r = await fetch(`${this.prometheus}/-/reload`, { method: 'POST' });
    if (!r.ok) throw new Error(`Prometheus refused the reload: ${r.status} ${await r.text()}`);
  }

  async recordEvent(body: Record<string, unknown>): Promise<void> {
    if (this.#ingest === null) throw new Error('the world is not started');
    const r = await fetch(`${this.#ingest.base}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.#ingest.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (r.status !== 201) throw new Error(`POST /v1/events answered ${r.status} ${await r.text()}`);
  }

  /** The connectors the service reads through and tells by; Prometheus's and Alertmanager's only once `monitoring` runs. */
  connectors(monitoring: boolean): Array<{ name: string; kind: string; settings: Record<string, unknown> }> {
    return [
      ...(monitoring
        ? [
            { name: CONNECTORS.metrics, kind: 'prometheus', settings: { url: this.prometheus } },
            { name: CONNECTORS.alerts, kind: 'alertmanager', settings: { url: this.alertmanager } },
          ]
        : []),
      { name: CONNECTORS.chat, kind: 'webhook', settings: { url: `${this.#address('chat')}/oncall`, secret: 'eval-chat-secret-0123456789' } },
      { name: CONNECTORS.platform, kind: 'git', settings: { path: this.platform.remote } },
      ...[...this.#own].map(([name, repo]) => ({ name: ownRepoConnector(name), kind: 'git', settings: { path: repo.remote } })),
      ...this.#servers.connectors(),
    ];
  }

  /** The estate's overrides: one entry per service, linked to its series, repository, health URL and dependencies. */
  estate(): { services: Record<string, Record<string, unknown>> } {
    const services: Record<string, Record<string, unknown>> = {};
    for (const s of this.services) {
      const links: Array<Record<string, string>> = [{ kind: 'workload', match: `job="${s.name}"`, connector: CONNECTORS.metrics }];
      if (s.serviceLabel === true) links.push({ kind: 'workload', match: `service="${s.name}"`, connector: CONNECTORS.metrics });
      if (s.host !== undefined) links.push({ kind: 'workload', match: `job="node", instance="${this.host(s.name).target}"`, connector: CONNECTORS.metrics });
      if (s.tls !== undefined)
        links.push({ kind: 'workload', match: `job="blackbox-tls", instance="${this.tls(s.name).target}"`, connector: CONNECTORS.metrics });
      links.push(...this.#servers.links(s.name, CONNECTORS.metrics));
      links.push(
        s.ownRepo === true
          ? { kind: 'repository', connector: ownRepoConnector(s.name) }
          : { kind: 'repository', connector: CONNECTORS.platform, path: `services/${s.name}` },
      );
      services[s.name] = {
        owner: `${s.name}-team@bank.example`,
        team: `${s.name}-team`,
        tier: 2,
        technologies: s.technologies,
        health_url: this.healthUrl(s.name),
        links,
        ...(s.dependsOn === undefined ? {} : { depends_on: s.dependsOn }),
      };
    }
    return { services };
  }

  /** autonomy.json: the services whose action path is to rehearse and ask (L1). */
  autonomy(): { services: Record<string, string> } {
    return { services: Object.fromEntries(this.services.filter((s) => s.l1 === true).map((s) => [s.name, 'L1'])) };
  }

  get #ruleFile(): string {
    return path.join(this.#dir, 'rules.yml');
  }

  #scraped(): Parameters<typeof prometheusYaml>[0] {
    const label = (on: boolean, name: string): Record<string, string> => (on ? { service: name } : {});
    return {
      apps: this.services.map((s) => ({
        job: appJob(s.name, s.servers),
        target: `127.0.0.1:${this.app(s.name).port}`,
        labels: label(s.serviceLabel === true, s.name),
      })),
      extra: this.#servers.jobs(),
      nodes: [...this.#hosts.values()].map((h) => h.target),
      probes: this.services.filter((s) => s.probe !== undefined).map((s) => ({ url: this.healthUrl(s.name), labels: label(s.probe === 'labelled', s.name) })),
      tls: [...this.#tls.values()].map((e) => e.target),
      blackbox: this.#address('blackbox').slice('http://'.length),
      alertmanager: this.#address('alertmanager').slice('http://'.length),
      ruleFile: this.#ruleFile,
    };
  }

  /** The on-call chat's webhook the service tells of incidents (a notification target): it takes every message. */
  async #chat(): Promise<void> {
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        this.told++;
        res.writeHead(204);
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.#ports.chat = (server.address() as AddressInfo).port;
    this.#t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  }

  async #daemon(name: keyof Ports, bin: string, files: (dir: string) => string[]): Promise<void> {
    this.#ports[name] = await onFreePort(async (port) => {
      const dir = path.join(this.#dir, `${name}-${port}`);
      mkdirSync(dir, { recursive: true });
      const args = [...files(dir), `--web.listen-address=127.0.0.1:${port}`];
      await startDaemon(this.#t, { name, bin, args, dir, base: `http://127.0.0.1:${port}` });
    });
  }
}
