/**
 * The plugin contract: packs (plugin API 1.x, additive): causes, the read-only check context,
 * verdicts and evidence, and the pack library (1.4; whole shared checks 1.7) every pack may use
 * through `ctx.lib` instead of a copy of its own. A pack imports nothing but types from the
 * contract; everything it can reach is in CheckContext. Imported through host/plugins/contract.ts.
 */
import type { PluginLibrary, PluginLog } from './common.ts';
import type { HttpFailure } from './connector.ts';
import type { AlertSeverity } from './normaliser.ts';

/**
 * A pack declares the **causes** it can check (see "Packs" below): its default export. The loader
 * checks every cause (id, title, applicability, reads, check function) and marks the whole pack
 * broken when one is malformed.
 */
export interface PackPlugin {
  /** The causes the pack can check; each id is `<pack name>/<cause>`. */
  causes: CauseDefinition[];
  /**
   * What the pack declares for capabilities that read only declared things (plugin API 1.5; see
   * {@link ReadDeclaration.named}), by capability, then by name: the `sql` statements its causes
   * run, such as `{ sql: { 'blocking-sessions': { dialect: 'postgres', text: 'SELECT …' } } }`.
   */
  named?: Record<string, Record<string, Record<string, unknown>>>;
}

/**
 * What a check can read: a capability's name (plugin API 1.5: any lower-case name a loaded
 * connector declares in its manifest's `reads`, or one the host serves itself). The host serves:
 * - `http`: a GET of a URL (the service's health URL), with the host's HTTP client (`ctx.http`);
 * - `ledger`: the service's own events in the ledger (`ctx.ledger`);
 * - `episodes`: the related episodes the host gathered (`ctx.related`).
 * The shipped connectors declare:
 * - `metrics`: PromQL instant and range queries (`prometheus`; `ctx.metrics`);
 * - `changes`: commits to the service's linked repositories (`git`) and `human.deploy` /
 *   `human.action` events of the ledger (`ctx.changes`);
 * - `sql`: a named, read-only statement the pack declares (`postgres`, `mysql`; `ctx.read('sql', …)`).
 * A capability with no typed reader is read with `ctx.read`. Signals and the estate entry are
 * always there and need no capability. A pack naming a capability nothing loaded declares is broken.
 */
export type ReadCapability = string;

/** The capabilities the host serves itself, without a connector. */
export type HostReadCapability = 'http' | 'ledger' | 'episodes';

/** Which moment a check reads: see {@link CheckContext.at}. Reads of the present (a health URL) are always `now`. */
export type CheckMoment = 'opening' | 'newest_signal' | 'asked' | 'now';

/** Why a check could not answer: the study's five obstacle kinds, word for word. */
export type Obstacle =
  'nothing connected can read it' | 'several connections could answer' | "the data isn't there" | 'the read was refused or failed' | "it can't be placed";

/** When a cause applies to an episode: any one condition given is enough. */
export interface CauseApplies {
  /** Always (every episode of every service). */
  always?: boolean;
  /** Alert names, exact (case-sensitive); a trailing `*` matches a prefix. */
  alerts?: string[];
  /** Prometheus-style matcher lists, such as `job="node"` or `severity=~"crit.*",team="db"`: a signal's labels match one. */
  labels?: string[];
  /** Technologies of the service in the estate (`postgres`, `http`, `jvm`), compared case-insensitively. */
  technologies?: string[];
}

/** The remedy a cause that holds may propose (the acting step decides whether it is done). */
export interface Remedy {
  /** The action kind a connector performs: `revert`, `silence`, `runbook`, `restart`, ... */
  action: string;
  /** Its parameters, plain JSON taken from the evidence (a commit, a matcher list, a runbook's name). */
  params: Record<string, unknown>;
  /** How it is undone, in words. */
  undo?: string;
}

/** How success of a remedy is checked: re-run a cause and expect an answer. */
export interface Verification {
  /** The cause id to re-run (often the cause itself). */
  cause: string;
  /** What it should then answer. */
  expect: 'ruled_out' | 'holds';
  /** How long after the action to re-run it, in seconds (default 120). */
  after_s?: number;
}

/**
 * One piece of evidence: what was read, where and when, and what it said. The host keeps at most
 * 16 KiB of each (the `observed` value is replaced by a note when larger) and blanks the
 * connector's secrets out of it.
 */
export interface EvidenceInput {
  /** The connector it was read from (its configured name), or `ledger`, `estate`, `signals`, `health_url`. */
  source: string;
  /** What kind of reading: `metric`, `series`, `commits`, `deploys`, `http`, `events`, `episodes`, `baseline`. */
  kind: string;
  /** The query as a person re-runs it: PromQL, a URL, a git range, a ledger filter. */
  query: string;
  /** The moment it is about (ISO 8601). */
  at: string;
  /** A small JSON of what was observed: a value, a series summary, a commit list. */
  observed: unknown;
  /** A sentence or two a person reads. */
  excerpt: string;
}

/** What a check answers. A check that throws or passes its deadline is `unknown` / `the read was refused or failed`. */
export type CheckAnswer =
  | {
      verdict: 'holds';
      /** Why it holds, a sentence a person reads. */
      reason: string;
      evidence: EvidenceInput[];
      /** How much the evidence says directly (0-1, default 1): ranks causes of equal specificity. */
      strength?: number;
      /**
       * What it holds on (plugin API 1.3): instances, targets, hosts (at most 50, each at most 200
       * characters). A cause that `explains` another ranks above it when both hold on one subject.
       */
      subjects?: string[];
      remedy?: Remedy;
      verification?: Verification;
    }
  | { verdict: 'ruled_out'; reason: string; evidence: EvidenceInput[] }
  | { verdict: 'unknown'; obstacle: Obstacle; reason: string; evidence?: EvidenceInput[] };

/** A cause a pack can check. */
export interface CauseDefinition {
  /** `<pack name>/<cause>`, lower case: `prometheus/error-rate`. */
  id: string;
  /** What it means, for people: "Error rate above normal". */
  title: string;
  /**
   * How specific a finding it is, 1-100: a dependency's incident or a recent change (a cause)
   * ranks above a symptom (a high error rate). The diagnosis ranks by it first.
   */
  specificity: number;
  /**
   * Causes this one explains when both hold on a common subject (plugin API 1.3): a process in a
   * crash loop explains its scrape target being down between restarts, so it then ranks above
   * them whatever their specificity.
   */
  explains?: string[];
  /** When it applies. */
  applies: CauseApplies;
  /** The capabilities its check reads; a cause whose capability no connector offers is `unknown` without running. */
  reads: ReadCapability[];
  /**
   * Its settings and their defaults (thresholds): numbers, strings or booleans. The estate can
   * override them per service (`check_settings` of the service's entry); the check reads the
   * result in `ctx.settings`.
   */
  settings?: Record<string, number | string | boolean>;
  /** The read-only check. */
  check(ctx: CheckContext): Promise<CheckAnswer> | CheckAnswer;
}

/** An alert of the episode, as a check sees it. */
export interface CheckSignal {
  fingerprint: string;
  name: string;
  severity: AlertSeverity;
  /** `firing`, `resolved` or `released`. */
  status: string;
  /** Flattened labels (all strings). */
  labels: Record<string, string>;
  summary: string;
  /** When it joined the episode (ISO 8601). */
  joined_at: string;
  /** What intake knows of its history. */
  baseline: { first_seen: string; last_seen: string; firings_7d: number; firings_30d: number; flapping: boolean };
  /** When the tool says the condition began (ISO 8601), or null when it does not say. */
  starts_at: string | null;
  /** The alert rule's own expression (PromQL), or null when the tool does not send it. */
  expression: string | null;
}

/** A link of the service in the estate. */
export interface CheckLink {
  kind: 'repository' | 'alert' | 'workload' | 'database' | 'runbook';
  match?: string;
  connector?: string;
  path?: string;
  name?: string;
  certain: boolean;
}

/** The service's entry in the estate; for an unplaced episode (`unknown`) every field is empty. */
export interface CheckService {
  name: string;
  owner: string | null;
  team: string | null;
  tier: number | null;
  technologies: string[];
  health_url: string | null;
  links: CheckLink[];
  depends_on: string[];
  /** Whether the estate has the service (false for `unknown` and services only alerts named). */
  in_estate: boolean;
}

/** An episode related to this one, as the retrieval step found it. */
export interface RelatedEpisode {
  id: string;
  service: string;
  state: 'open' | 'closed';
  t_open: string;
  t_close: string | null;
  alerts: string[];
}

/** One sample of an instant query. */
export interface MetricSample {
  metric: Record<string, string>;
  /** The value (NaN and infinities as numbers). */
  value: number;
}

/** One series of a range query. */
export interface MetricSeries {
  metric: Record<string, string>;
  /** `[unix seconds, value]` pairs in time order. */
  values: Array<[number, number]>;
}

/** What a read answered and where it came from: copy `source`, `query` and `at` into the evidence. */
export interface ReadOrigin {
  source: string;
  query: string;
  at: string;
}

/**
 * PromQL through the metrics connector linked to the service. A read that cannot be made throws
 * a {@link ReadFailure}; a check that lets it through becomes `unknown` with its obstacle.
 */
export interface MetricsReader {
  /** An instant query at `at` (ISO 8601; default the check's moment): a vector, or a scalar as one sample with no labels. */
  query(promql: string, at?: string): Promise<ReadOrigin & { samples: MetricSample[] }>;
  /** A range query. `step_s` at least 1; at most 11,000 points per series (Prometheus's own limit). */
  range(promql: string, opts: { start: string; end: string; step_s: number }): Promise<ReadOrigin & { series: MetricSeries[] }>;
}

/** A commit to a linked repository. */
export interface Commit {
  /** The connector that read it. */
  source: string;
  /** The linked repository's folder, or `.` for all of it. */
  path: string;
  sha: string;
  /** Commit time (ISO 8601). */
  at: string;
  author: string;
  subject: string;
}

/**
 * A `human.deploy` or `human.action` event for the service. Such events are recorded by callers
 * (POST /v1/events): evidence of what the caller says happened, with that provenance, never fact.
 */
export interface ChangeEvent {
  seq: number;
  type: string;
  at: string;
  /** Who the caller says did it. */
  actor: string;
  reason: string | null;
  data: Record<string, unknown>;
  /**
   * Who recorded the event: `ingest-token` for one a caller recorded through POST /v1/events
   * (`data.recorded_by`); null for the service's own. Absent only in replayed scenarios.
   */
  recorded_by?: string | null;
}

/** What `changes.since` answers: the commits and events found, and what could not be read. */
export interface Changes {
  /** Newest first. */
  commits: Commit[];
  /** Newest first. */
  events: ChangeEvent[];
  /** Repositories (or the lack of any) that could not be read, each with its obstacle. */
  gaps: Array<{ source: string; obstacle: Obstacle; problem: string }>;
}

/** Commits to the service's linked repositories and deploy/action events of the ledger. */
export interface ChangesReader {
  /** Changes from `since` up to `until` (default the check's moment), both ISO 8601. */
  since(since: string, until?: string): Promise<Changes>;
}

/** A GET of a URL: an HTTP answer of any status, or the reason no answer came. */
export type HttpReading = ReadOrigin &
  (
    | { answered: true; status: number; took_ms: number; excerpt: string }
    /** No answer: `took_ms` is how long it took to fail (a refusal is quick, a timeout takes all of it), `failure` what kind it was. */
    | { answered: false; took_ms: number; problem: string; failure: HttpFailure }
  );

export interface HttpReader {
  /** GETs `url` (no redirects followed, at most 64 KiB read), cut off after `timeout_s` (default 5, at most 15). */
  get(url: string, opts?: { timeout_s?: number }): Promise<HttpReading>;
}

/** An event of the ledger about this service (its `data.service` names it). */
export interface ServiceEvent {
  seq: number;
  type: string;
  at: string;
  actor: string;
  reason: string | null;
  trace: string | null;
  data: Record<string, unknown>;
  /** Who recorded it: `ingest-token` for a caller's event (POST /v1/events), null for the service's own. Absent only in replayed scenarios. */
  recorded_by?: string | null;
}

export interface LedgerReader {
  /** Events of the service, newest first; `type` is a type or a prefix ending in `.` (`human.`). At most `limit` (default 100, at most 1000). */
  events(filter: { type?: string; since?: string; limit?: number }): Promise<ServiceEvent[]>;
}

/** What `ctx.read` answers: where it came from, and the connector's answer. */
export type CapabilityReading = ReadOrigin & { answer: unknown };

/**
 * Thrown by a reader when the read cannot be made: no connector, several, a refusal or a failure.
 * The host turns it into `unknown` with its obstacle and problem when the check lets it through.
 */
export interface ReadFailure extends Error {
  obstacle: Obstacle;
  problem: string;
}

/**
 * Everything a check can reach: read methods bound to the connectors the estate links to the
 * service, what the episode and the estate say, a logger, an abort signal and a deadline. There
 * is no method that changes anything outside; the object is frozen.
 */
export interface CheckContext {
  /** The episode checked, or `id: null` when a check runs outside one (`oncall checks run`, the study). */
  episode: { id: string | null; service: string; opened_at: string };
  /**
   * The moment the check is about (ISO 8601), which `metrics.query` reads by default: for an
   * episode's first run its opening, for a re-run (new alerts joined) the newest signal's
   * arrival, outside episodes the time asked for or now. `moment` says which.
   */
  at: string;
  /** What `at` is: `opening`, `newest_signal` (a re-run), `asked` (a time given by a person) or `now`. */
  moment: CheckMoment;
  signals: CheckSignal[];
  service: CheckService;
  /** Episodes of the service's dependencies open when this one opened (or now), and the service's own of the last 7 days. */
  related: { dependencies: RelatedEpisode[]; history: RelatedEpisode[] };
  /** The cause's settings: its defaults, overridden by the estate's `check_settings` for the service. */
  settings: Readonly<Record<string, number | string | boolean>>;
  metrics: MetricsReader;
  changes: ChangesReader;
  http: HttpReader;
  ledger: LedgerReader;
  /**
   * Any declared capability (plugin API 1.5), by name: `ctx.read('sql', { name: 'blocking-sessions' })`.
   * The request must match the capability's `request` schema, the answer its `answer` schema;
   * a read that cannot be made throws a {@link ReadFailure} as the typed readers do.
   */
  read(capability: ReadCapability, request: Record<string, unknown>): Promise<CapabilityReading>;
  log: PluginLog;
  /** Shared helpers (plugin API 1.4): PromQL building and placement, words for numbers. */
  lib: PackLibrary;
  /** Aborted at the deadline: hand it on to anything that waits. */
  signal: AbortSignal;
  /** When the host stops waiting for the check (epoch milliseconds). */
  deadline: number;
}

/** How a cause's queries select the service's series. */
export interface Placement {
  /** PromQL matcher lists without braces (`job="orders"`), joined with `or` by {@link PrometheusLibrary.overAll}. */
  selectors: string[];
  /** `workload`: the estate's workload links; `job` / `service`: found by the service's name. */
  how: 'workload' | 'job' | 'service';
  /** Workload links that could not be used, with why. */
  skipped: string[];
}

/** A placement, or the unknown answer when the service's series cannot be told apart. */
export type Placed = { ok: true; placement: Placement } | { ok: false; obstacle: Obstacle; reason: string };

/** A window for a rate: PromQL text, seconds, and why it is that long (for the evidence). */
export interface RateWindow {
  text: string;
  s: number;
  why: string;
}

/** A cause's settings read with their types checked; `problem()` names every one that cannot be used. */
export interface SettingsReader {
  /** A number above `min` (and at most `max`). */
  number(name: string, min: number, max?: number): number;
  /** A PromQL duration (`5m`), as written and in seconds. */
  duration(name: string): { text: string; s: number };
  /** A metric or label name. */
  name(name: string): string;
  /** The unknown answer's reason when a setting cannot be used, else null. */
  problem(): string | null;
}

/** PromQL building and placement by the estate's workload links, as the `prometheus` pack uses them. */
export interface PrometheusLibrary {
  /** Which series are the service's: its workload links' matchers, else its name as `job` or `service` (one probe query). */
  place(ctx: CheckContext): Promise<Placed>;
  /** One expression over every selector of the placement, joined with `or` (a series two links select counts once). */
  overAll(p: Placement, expr: (selector: string) => string): string;
  /** The placement's selectors for a reason, with where they came from. */
  describedAll(p: Placement): string;
  /** A PromQL double-quoted string literal. */
  quote(value: string): string;
  /** The estate's matcher list as PromQL matchers, or why it cannot be one. */
  promMatchers(text: string): { ok: true; selector: string } | { ok: false; problem: string };
  /** Seconds in a PromQL duration, or null. */
  durationSeconds(text: string): number | null;
  /** The window to read a rate of `metric` over: no longer than the setting, the alert's own range, or the time since the alert began. */
  alertWindow(ctx: CheckContext, metric: string, setting: { text: string; s: number }): RateWindow;
  /** The cause's settings, read with their types checked. */
  settings(ctx: CheckContext): SettingsReader;
  /** A sample value as a number (recorded answers may hold `"NaN"`). */
  num(v: unknown): number;
  /** `12.3 %`. */
  percent(ratio: number): string;
  /** `1.5 GiB`. */
  bytes(n: number): string;
  /** `850 ms`, `2.41 s`. */
  seconds(s: number): string;
  /** A number for `observed`: 6 significant digits, NaN and infinities as text. */
  rounded(v: number): number | string;
  /** A series' labels without `__name__`. */
  labelsOf(metric: Record<string, string>): Record<string, string>;
  /** A short name of a series: its `instance`, else its labels. */
  seriesName(metric: Record<string, string>, prefer?: string[]): string;
  /** Names for a sentence: at most `max`, then how many more. */
  listed(names: string[], max?: number): string;
  /** Samples as `observed` keeps them (at most `MAX_SERIES`, with the total). */
  samplesObserved(samples: MetricSample[], extra?: Record<string, unknown>): Record<string, unknown>;
  /** An evidence item of a reader's answer: its source, query and time as read. */
  evidenceOf(answer: ReadOrigin, kind: string, observed: unknown, excerpt: string): EvidenceInput;
  /** `1 process`, `3 processes`. */
  count(n: number, one: string, many?: string): string;
  /** The most series an evidence item lists. */
  readonly MAX_SERIES: number;
  /**
   * Plugin API 1.7: the whole check of an exporter that cannot reach its server
   * (`<metric> == 0` at the check's moment), as `mysql/down` and `redis/down` declare it.
   */
  upCheck(ctx: CheckContext, check: UpCheck): Promise<CheckAnswer>;
  /**
   * Plugin API 1.7: the whole check of sessions near `max_connections` (the cause's `ratio`
   * setting), as `mysql/connections-near-limit` and `postgres/connections-near-limit` declare it.
   */
  connectionsCheck(ctx: CheckContext, check: ConnectionsCheck): Promise<CheckAnswer>;
  /**
   * Plugin API 1.7: the whole check of a counter rising by the cause's `min` setting over its
   * `window` setting (cut to the alert's own), as `postgres/deadlocks` and `mysql/slow-queries`
   * declare it.
   */
  counterCheck(ctx: CheckContext, check: CounterCheck): Promise<CheckAnswer>;
}

/** What differs between causes checking an exporter's `<product>_up` (plugin API 1.7, {@link PrometheusLibrary.upCheck}). */
export interface UpCheck {
  /** The cause's id, named as its verification. */
  id: string;
  /** The gauge, 1 when the exporter reaches its server: `mysql_up`. */
  metric: string;
  /** The server for people: `MySQL`. */
  product: string;
  /** The exporter to link when there is no series: `prometheus-mysqld-exporter`. */
  exporter: string;
  /** What `observed` counts them as: `servers`, `instances`. */
  counted: string;
}

/** What differs between causes checking sessions against `max_connections` (plugin API 1.7, {@link PrometheusLibrary.connectionsCheck}). */
export interface ConnectionsCheck {
  id: string;
  /** The server for people: `PostgreSQL`. */
  product: string;
  /** Sessions over `max_connections`, one value per `instance`, over one selector. */
  query: (selector: string) => string;
  /** The series named when the query answers nothing: `pg_stat_activity_count or pg_settings_max_connections`. */
  series: string;
  exporter: string;
}

/** One series of a counter's increase, as {@link CounterCheck} words it. */
export interface CounterRow {
  /** The series for people. */
  name: string;
  /** Its `instance` (else its labels): the subject. */
  instance: string;
  /** The increase over the window. */
  n: number;
}

/** What a {@link CounterCheck}'s reasons can say. */
export interface CounterWords {
  /** Every series, most first. */
  rows: CounterRow[];
  /** Those that rose by `min` or more (and above 0). */
  hit: CounterRow[];
  /** The increase of all series. */
  total: number;
  /** Rows in a sentence: `name: 3, …`. */
  shown: (rows: CounterRow[]) => string;
  /** The window read, as PromQL. */
  window: string;
  /** The placement in words. */
  where: string;
  /** The `min` setting. */
  min: number;
}

/** What differs between causes checking a counter rising (plugin API 1.7, {@link PrometheusLibrary.counterCheck}). */
export interface CounterCheck {
  id: string;
  /** The counter: `pg_stat_database_deadlocks`. */
  metric: string;
  /** The labels its increase is summed by: `['instance', 'datname']`. */
  by: string[];
  exporter: string;
  /** A series for people (default: its `instance`, else its labels). */
  name?: (metric: Record<string, string>) => string;
  /** The names in `observed`: the list's, and each row's name and value (`databases`, `database`, `deadlocks`). */
  observed: { rows: string; name: string; value: string };
  /** What the evidence says is counted: `Deadlocks` (`Deadlocks in the last 10m (…): …`). */
  counted: string;
  /** The reason when it holds. */
  holds: (w: CounterWords) => string;
  /** The reason when it is ruled out. */
  ruledOut: (w: CounterWords) => string;
}

/** What `ctx.lib` offers a pack: the plugin library (text, matchers: 1.6) and the Prometheus helpers (1.4; whole shared checks 1.7). */
export interface PackLibrary extends PluginLibrary {
  readonly prometheus: PrometheusLibrary;
}
