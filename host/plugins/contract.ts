/**
 * The plugin contract: the only host module that code in `plugins/` and `packs/` may import
 * (and then only with `import type`). Everything a plugin can rely on is declared here, so the
 * host's internals can change without breaking a vendor's plugin.
 *
 * A plugin is a folder with a `plugin.json` (see {@link PluginManifest} and
 * `host/plugins/manifest.schema.json`) whose `entry` module default-exports the plugin object:
 * a {@link NormaliserPlugin}, {@link ConnectorPlugin} or {@link PackPlugin} according to `kind`.
 *
 * Over 300 lines and one concept, kept in one file on purpose: it is the public API a vendor
 * reads and imports from (the one module a plugin may name; vendors copy it to type-check
 * against), versioned as a whole by PLUGIN_API_VERSION, the HTTP client's types included. It
 * holds declarations only, no code; the length is their documentation.
 *
 * @packageDocumentation
 */

/** What a plugin does; decides which object its entry must default-export. */
export type PluginKind = 'normaliser' | 'connector' | 'pack';

/**
 * A JSON Schema (draft-07) describing an object, as a connector declares its settings.
 * Secret fields carry `"writeOnly": true`: the host stores them encrypted and never shows them.
 */
export type SettingsSchema = Record<string, unknown>;

/** The contents of a valid `plugin.json`. */
export interface PluginManifest {
  /** Lower-case name, unique within its kind; the newest compatible version of a name is used. */
  name: string;
  /** The plugin's own semantic version, such as `1.4.0`. */
  version: string;
  /** What the plugin does. */
  kind: PluginKind;
  /** The semver range of host plugin APIs the plugin was built for, such as `^1.0.0`. */
  api: string;
  /** Path of the entry module relative to the plugin folder; it must stay inside the folder. */
  entry: string;
  /** A sentence or two for people. */
  description?: string;
  /** Connectors only (and required for them): the JSON Schema of the connector's settings. */
  settings?: SettingsSchema;
  /** Normalisers only: other lower-case names the source is known by. */
  aliases?: string[];
  /**
   * Connectors only (plugin API 1.2): the action kinds the connector performs, by kind name
   * (`silence`, `revert`, `runbook`). See {@link ActionDeclaration} and "Actions" below.
   */
  actions?: Record<string, ActionDeclaration>;
  /**
   * Connectors only (plugin API 1.5): the read capabilities the connector offers to checks, by
   * capability name (`metrics`, `changes`, `sql`). See {@link ReadDeclaration}. A capability is a
   * connector's to add: the host routes and guards the reads without knowing what they mean.
   */
  reads?: Record<string, ReadDeclaration>;
}

/**
 * A read capability a connector declares in its manifest (plugin API 1.5). Read-only by
 * construction: the host reaches it only through the connector's `read` (or, for `metrics` and
 * `changes`, `query`, `range`, `changes`), from a check context that has no way to change anything,
 * and validates what goes in and what comes back against the schemas here.
 */
export interface ReadDeclaration {
  /** What it reads, for people. */
  description: string;
  /** A JSON Schema (draft-07) of the request a check hands `ctx.read(capability, request)`; the host refuses any other. */
  request: SettingsSchema;
  /** A JSON Schema (draft-07) of `answer` in what the connector answers; the host refuses any other. */
  answer: SettingsSchema;
  /**
   * When present, the capability reads only what a pack declared (its {@link PackPlugin.named}),
   * never text a check makes up from an alert: a request must name (`request.name`) one of the
   * reading pack's declarations of this capability, which must match this JSON Schema, and the
   * connector receives that declaration as `declared`. `sql` uses it for its named statements.
   */
  named?: SettingsSchema;
}

/** An action kind a connector declares in its manifest. */
export interface ActionDeclaration {
  /** What it does, for people. */
  description: string;
  /** A JSON Schema (draft-07) of the action's `params`; the host validates them before any call. */
  params: SettingsSchema;
  /** Whether `rehearse` can show what `act` would do without changing anything. */
  rehearsable: boolean;
  /** Whether `undo` can reverse it. An irreversible action is never taken without approval. */
  reversible: boolean;
}

/** Extra structured fields for a log line; secrets are never to be put here. */
export type LogFields = Record<string, unknown>;

/** The logger a plugin is handed; lines are tagged with the plugin's name by the host. */
export interface PluginLog {
  /** Something worth knowing happened. */
  info(message: string, fields?: LogFields): void;
  /** Something looks wrong but work carries on. */
  warn(message: string, fields?: LogFields): void;
  /** Something failed. */
  error(message: string, fields?: LogFields): void;
}

/**
 * What the host hands a plugin when it calls it: nothing else of the host is reachable.
 * @typeParam S - the shape of the plugin's settings, as its manifest's settings schema describes.
 */
export interface PluginContext<S extends Record<string, unknown> = Record<string, unknown>> {
  /** A logger scoped to this plugin. */
  log: PluginLog;
  /** Settings already validated against the manifest's `settings` schema, secrets resolved. */
  settings: Readonly<S>;
}

/** Severity in the common vocabulary; a tool's unknown value maps to `warning`. */
export type AlertSeverity = 'critical' | 'warning' | 'info';

/** Whether the alert is still going on. */
export type AlertStatus = 'firing' | 'resolved';

/**
 * One alert as a normaliser reads it from a tool's body. The host checks it, flattens `labels`
 * (nested objects become dotted keys, numbers and booleans strings, arrays comma-joined, nulls
 * dropped), adds `labels.siem` and computes the fingerprint: `id` when given, else a hash of the
 * normaliser's name, `name` and the identifying labels.
 */
export interface NormalisedAlert {
  /** The alert's name as the tool calls it (rule, monitor, search, title). */
  name: string;
  /** Mapped from the tool's own vocabulary; anything unknown is `warning`. */
  severity: AlertSeverity;
  /** `resolved` only when the tool says the condition cleared. */
  status: AlertStatus;
  /** The service the alert belongs to, or null when the body names none. */
  service: string | null;
  /** The tool's descriptive fields. Never put a secret here (an integration key, a token). */
  labels: Record<string, unknown>;
  /** Free text for people; may be empty. */
  summary: string;
  /**
   * The tool's own id for this alert, stable from firing to resolved (an incident id, an
   * alert-cycle key), or null. Never a per-delivery id, which would make resolves miss.
   */
  id: string | null;
  /**
   * Without an `id`: the label keys (after flattening) that identify the alert and so enter the
   * fingerprint. Omitted: every label does. Volatile values (timestamps, measured values,
   * counts) must stay out of it, or a re-send would look like a new alert.
   */
  identity?: string[];
  /**
   * What the tool says of the alert beyond its labels, when it says it (plugin API 1.3, optional):
   * when the condition began and the rule's own expression. Checks read it to look at the moment
   * and the window the alert saw. Never part of the fingerprint.
   */
  context?: AlertContext;
}

/** What an alerting tool said of an alert beyond its labels. */
export interface AlertContext {
  /** When the condition began as the tool says (Alertmanager's `startsAt`), ISO 8601. */
  starts_at?: string;
  /** The rule's expression as the tool evaluated it (PromQL from Prometheus's `generatorURL`). */
  expression?: string;
}

/**
 * A normaliser turns one tool's alert bodies into common alerts. It is a pure function plus
 * lookup tables: the host, not the plugin, stamps the source label and the fingerprint.
 */
export interface NormaliserPlugin {
  /**
   * Maps a body the tool sent to its alerts (a batch answers several). Answers null when the
   * body is not one this tool sends; the host then refuses it whole with 400 `unreadable_alert`.
   */
  normalise(body: unknown): NormalisedAlert[] | null;
  /** Answers whether a body looks like this tool's, for bodies pushed to `auto`. */
  detect(body: unknown): boolean;
}

/** What a connector's `test` answers: a failure is data, with the reason a person can act on. */
export interface ConnectorTestResult {
  /** True when the connector reached the system and was let in. */
  ok: boolean;
  /** Null when `ok`; otherwise what is wrong, such as "authentication failed". */
  problem: string | null;
}

/** A connector talks to an outside system with the settings its manifest describes. */
export interface ConnectorPlugin {
  /** Checks that the settings work (reachable, authenticated) without changing anything. */
  test(ctx: PluginContext): Promise<ConnectorTestResult> | ConnectorTestResult;
}

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

/** The object an entry module default-exports, by kind. */
export interface PluginByKind {
  /** A `normaliser` entry default-exports this. */
  normaliser: NormaliserPlugin;
  /** A `connector` entry default-exports this. */
  connector: ConnectorPlugin;
  /** A `pack` entry default-exports this. */
  pack: PackPlugin;
}

// ---------------------------------------------------------------------------------------------
// Connector additions (plugin API 1.x, backwards-compatible: every member below is optional, so
// a connector written against the first version of this contract keeps loading and working).
// ---------------------------------------------------------------------------------------------

/**
 * What the host hands a connector's methods. It is a {@link PluginContext} (a connector written
 * against `PluginContext` keeps working) plus what the host adds for calls that reach outside.
 * @typeParam S - the shape of the connector's settings.
 */
export interface ConnectorContext<S extends Record<string, unknown> = Record<string, unknown>> extends PluginContext<S> {
  /**
   * Aborted when the host stops waiting for this call: its cut-off passed (15 s, or the
   * connector's own `timeout_s` setting when lower). Hand it to `fetch` and other I/O so nothing
   * is left running after the host has given up. Absent when a host older than this addition
   * calls the plugin, so write `ctx.signal ?? undefined`-tolerant code.
   */
  signal?: AbortSignal;
  /** When the host will give up on this call, in milliseconds from now; absent as `signal`. */
  timeoutMs?: number;
  /**
   * The host's HTTP client for this call: use it instead of `fetch`, so no plugin writes its
   * own timeouts, auth, redirect policy or error wording. See {@link PluginHttp}. Always present
   * on this host; a connector's own test (outside the host) can build a context without the
   * host by handing in any object with the same `request` method.
   */
  http: PluginHttp;
  /**
   * In `test` only (plugin API 1.5): the loaded packs' declarations for the capabilities this
   * connector declares with `named`, by capability, then `<pack>/<name>`, so that its test can
   * say which of them its account may run (in `found`). Absent when there are none.
   */
  named?: Record<string, Record<string, Record<string, unknown>>>;
}

/** How a request authenticates; the credentials are sent only to the address asked for. */
export type HttpAuth =
  /** `Authorization: Basic base64(username:password)`. */
  | { basic: { username: string; password?: string } }
  /** `Authorization: Bearer <token>`. */
  | { bearer: string };

/** One HTTP request through {@link PluginHttp.request}. */
export interface HttpRequest {
  /**
   * `GET` when omitted. Reads (`test`, `query`, `range`, `changes`, `discover`, `pollAlerts`) send
   * only GET or HEAD; `notify`, `act` and `undo` may send the others (`DELETE`: plugin API 1.2).
   */
  method?: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE';
  /** The absolute `http:` or `https:` address. */
  url: string;
  /** Query parameters appended to `url`, in order (a name may repeat). */
  query?: Array<[string, string]>;
  /** Request headers; names are case-insensitive. `auth`, when given, replaces an `authorization` header here. */
  headers?: Record<string, string>;
  /** Basic or bearer auth. */
  auth?: HttpAuth;
  /** The exact request body bytes (a JSON text for a webhook); sent as given. */
  body?: string;
  /**
   * How long the request may take, in seconds: default the connector's `timeout_s` setting,
   * else 10. The host's cut-off (`signal`) stops it earlier when that comes first.
   */
  timeoutS?: number;
  /** The most of the response body read, in bytes (default 1 MiB); the rest is dropped and `truncated` set. */
  maxBodyBytes?: number;
  /**
   * How the address is named in a problem: `path` (origin and path, never the query string; the
   * default) or `origin` only, for addresses whose path carries a token (webhooks).
   */
  shown?: 'path' | 'origin';
}

/**
 * What {@link PluginHttp.request} answers. An HTTP answer of any status is `ok: true` (the
 * connector says what a 401 or a 404 means for its system); `ok: false` is a request that got no
 * HTTP answer, with the reason in words a person can act on.
 */
export type HttpAnswer =
  | {
      ok: true;
      status: number;
      /** Response headers, names in lower case. A 3xx is answered as is: redirects are never followed. */
      headers: Record<string, string>;
      /** The body as UTF-8 text, at most `maxBodyBytes` of it (empty for HEAD). */
      text: string;
      /** Whether the body was longer than `maxBodyBytes`. */
      truncated: boolean;
      /** The address as a problem names it (see {@link HttpRequest.shown}). */
      where: string;
      /** How long the request took, headers and body. */
      took_ms: number;
    }
  | {
      ok: false;
      /**
       * Why no answer came: `no answer from <where> within <n> s`, `cannot connect to <host>:
       * connection refused`, `cannot resolve <host>`, `TLS failed with <host>: <code>`, `cannot
       * reach <where>: <code>`. Scrubbed of the connector's secret settings.
       */
      problem: string;
      /** What kind of failure it was (plugin API 1.3): what `problem` says, as a word a program can test. */
      failure?: HttpFailure;
      /** How long it took to fail (plugin API 1.3): a refusal takes milliseconds, a timeout its whole timeout. */
      took_ms?: number;
    };

/** Why a request got no HTTP answer. */
export type HttpFailure = 'timeout' | 'refused' | 'unresolved' | 'tls' | 'reset' | 'invalid' | 'other';

/**
 * The HTTP client the host hands a connector (`ctx.http`, plugin API 1.x addition). Every
 * request is cut off at its timeout and at the host's cut-off (the call's abort signal), never
 * follows a redirect (so a credential never travels to another address), reads at most
 * `maxBodyBytes` of the body, and words a failure for a person, with the connector's secrets
 * blanked out of it. It never throws for a network failure: it answers `{ok: false, problem}`.
 */
export interface PluginHttp {
  request(req: HttpRequest): Promise<HttpAnswer>;
}

/**
 * What a connector's `test` may add to {@link ConnectorTestResult} to say what it found
 * (`POST /v1/connectors/test` shows it). Extra members of a test result are allowed: TypeScript
 * accepts them on an object typed as `ConnectorTestResult & ConnectorFindings`.
 */
export interface ConnectorFindings {
  /**
   * Facts a person can check against the system: a version, a cluster name, a count of targets.
   * Plain JSON values (strings, numbers, booleans, null, arrays and objects of those), kept
   * small (the host keeps at most 8 KiB of it). Never a secret: the host also blanks any value
   * equal to one of the connector's secret settings, but do not rely on that.
   */
  found?: Record<string, unknown>;
}

/** A read-only question a connector answers (`POST /v1/connectors/{name}/query`). */
export interface ConnectorQueryRequest {
  /** The question in the system's own language: PromQL for `prometheus`, a path for `http`. */
  query: string;
  /** The moment asked about (ISO 8601); omitted: now. Connectors that have no notion of time ignore it. */
  at?: string;
  /** Extra kind-specific parameters, all strings; a connector ignores those it does not know. */
  params?: Record<string, string>;
}

/** What a connector's `query` answers: a failure is data, as for `test`. */
export interface ConnectorQueryResult {
  /** True when the system answered the question. */
  ok: boolean;
  /** Null when `ok`; otherwise why not, in words a person can act on. */
  problem: string | null;
  /**
   * The answer, as plain JSON (the host keeps at most 1 MiB of it). Its shape is the
   * connector's to document in its README; for `prometheus` it is the API's `data` object.
   */
  data?: unknown;
}

/**
 * The optional methods a connector may offer beyond `test`. A connector's default export is a
 * {@link ConnectorPlugin} and may also carry these; the host checks each is a function before it
 * calls it, and answers "not supported by this kind" otherwise.
 *
 * Every method here must be read-only: it may look, never change anything in the outside system
 * (`notify` sends a message; `act` and `undo` of "Actions" below are the only calls that change it).
 * The host calls them with a {@link ConnectorContext}, cuts each call off at its timeout, and
 * turns a throw or a rejected promise into a problem; a plugin can never take the host down.
 */
export interface ConnectorCapabilities {
  /** Answers one read-only question (an instant query, a GET of a path). */
  query?(ctx: ConnectorContext, request: ConnectorQueryRequest): Promise<ConnectorQueryResult> | ConnectorQueryResult;
  /**
   * For alert sources the host polls instead of being pushed to: answers the alerts firing now
   * (and, where the source says so, those just resolved) in the common shape. The host stamps
   * source and fingerprint as for pushed alerts. The host polls every connector whose kind
   * offers it, every `poll_s` seconds of its settings (else 60 s), under a lease so that one
   * host process polls each connector once per interval (host/schedule/poller.ts,
   * docs/polling.md); the catalogue lists it as `poll_alerts`.
   */
  pollAlerts?(ctx: ConnectorContext): Promise<NormalisedAlert[]> | NormalisedAlert[];
}

/** One read a check asked of a capability the connector declares (plugin API 1.5). */
export interface ConnectorReadRequest {
  /** The capability, one the connector's manifest declares in `reads`. */
  capability: string;
  /** The check's request, already validated against the declaration's `request` schema. */
  request: Record<string, unknown>;
  /**
   * For a capability with `named`: the reading pack's declaration that `request.name` names
   * (validated against the `named` schema), with its pack: run this, never anything else.
   */
  declared?: { pack: string; name: string; value: Record<string, unknown> };
}

/** What a connector's `read` answers: a failure is data, as for `query`. */
export interface ConnectorReadResult {
  ok: boolean;
  problem: string | null;
  /** The answer, matching the declaration's `answer` schema (the host keeps at most 1 MiB of it). */
  answer?: unknown;
  /** What a person re-runs to see the same (a statement's text), for the evidence; default `<capability> <name>`. */
  shown?: string;
}

export interface ConnectorCapabilities {
  /**
   * Answers one read of a capability the manifest declares in `reads` (plugin API 1.5).
   * Read-only like every read; cut off at the check's deadline (`ctx.signal`).
   */
  read?(ctx: ConnectorContext, request: ConnectorReadRequest): Promise<ConnectorReadResult> | ConnectorReadResult;
}

/** A connector's default export with the optional capabilities: what vendors should type it as. */
export type ConnectorPluginWithCapabilities = ConnectorPlugin & ConnectorCapabilities;

// ---------------------------------------------------------------------------------------------
// Discovery (plugin API 1.x, backwards-compatible: optional, declared by merging into
// ConnectorCapabilities, so connectors without it keep loading and working).
// ---------------------------------------------------------------------------------------------

/** One service name a connector proposes: a candidate for a person to add, never a service. */
export interface DiscoveredService {
  /** The service's name as the system spells it: a letter or digit, then letters, digits, `.`, `_`, `-` (at most 200). */
  name: string;
  /** How it was found, one short word: `manifest`, `folder`, `codeowners`, `label`, ... */
  source: string;
  /**
   * Why the connector believes it: where it was read (a file path, a label and its value), the
   * owners it names, a commit. Plain JSON, small (the host keeps at most 4 KiB per entry). Never a secret.
   */
  evidence: Record<string, unknown>;
}

/** What a connector's `discover` answers. */
export interface DiscoveryResult {
  /** The names found; the same name may come several times with different sources (the host merges them). */
  services: DiscoveredService[];
}

export interface ConnectorCapabilities {
  /**
   * Proposes the services the system knows of (`POST /v1/discover`). Read-only like every
   * capability. The host cuts the call off at `SERVICE_DISCOVER_TIMEOUT_S` (45 s by default;
   * `ctx.timeoutMs` says when) and aborts `ctx.signal`; a throw becomes the connection's problem.
   * What it answers is kept as candidates until a person adds them.
   */
  discover?(ctx: ConnectorContext): Promise<DiscoveryResult> | DiscoveryResult;
}

// ---------------------------------------------------------------------------------------------
// Notification (plugin API 1.x, backwards-compatible: optional, declared by merging into
// ConnectorCapabilities, so connectors without it keep loading and working).
// ---------------------------------------------------------------------------------------------

/**
 * What happened to an incident: the reason a notification is sent. `incident.approval_requested`
 * and `incident.approval_superseded` (the request no longer stands: a newer run of the episode
 * took the action path over) go by e-mail to the approvers only, never to a target.
 */
export type NotifyEvent =
  'incident.opened' | 'incident.closed' | 'incident.escalated' | 'incident.diagnosed' | 'incident.approval_requested' | 'incident.approval_superseded';

/** The incident a notification tells of, as the host describes it to every notification target. */
export interface NotifyEpisode {
  /** The episode's id: stable from opening to closing, so a target can de-duplicate on it. */
  id: string;
  /** The service the incident is about (`unknown` when the alerts name none). */
  service: string;
  /** The worst severity among the incident's alerts. */
  severity: AlertSeverity;
  /** When the incident opened (ISO 8601). */
  t_open: string;
  /** The names of its alerts (at most 100). */
  alerts: string[];
  /** The episode's outcome when the message was written (`escalated`, ...), or null while there is none. */
  outcome: string | null;
  /** The episode's page in the console, or null when the install has no SERVICE_PUBLIC_URL. */
  url: string | null;
  /**
   * Plugin API 1.1: on `incident.diagnosed`, what the investigation found: the causes that hold
   * (best first), those it could not check, and the sentences a person reads first. Also on the
   * action path's `incident.escalated` and `incident.approval_requested` once the episode has a
   * diagnosis (beside `report`). Absent on other events. Every text field of a message is one
   * plain line (no line break, control character or terminal escape); `report` is Markdown whose
   * values are escaped.
   */
  diagnosis?: { summary: string; holds: string[]; unknown: string[] };
  /**
   * Plugin API 1.2: on `incident.escalated` after the action path ended without a mitigation, and
   * on `incident.approval_requested` (sent by e-mail to approvers only), the report as Markdown:
   * the diagnosis, what was proposed, decided and done, and why people are needed.
   */
  report?: string;
}

/** One notification: what a target is asked to deliver. The host retries it until it is delivered or 1 hour has passed. */
export interface NotifyMessage {
  /** What happened. */
  event: NotifyEvent;
  /** The incident it happened to. */
  episode: NotifyEpisode;
  /** When this attempt was made (ISO 8601); a retry carries a newer time. */
  sent_at: string;
}

/** What a connector's `notify` answers: a failure is data, as for `test`. */
export interface NotifyResult {
  /** True when the outside system accepted the message (a 2xx, an API's "accepted"). */
  ok: boolean;
  /** Null when `ok`; otherwise why not, in words a person can act on. Never a secret. */
  problem: string | null;
}

export interface ConnectorCapabilities {
  /**
   * Delivers one notification about an incident to the system (a webhook, a paging service, a
   * chat tool). Its presence makes the kind a **notification target**: the catalogue lists the
   * capability `notify`, and `PUT /v1/settings/notifications` accepts connectors of the kind
   * as `targets`.
   *
   * The one capability that changes something outside: it sends a message, and nothing else.
   * The host calls it from its delivery worker, at least once per message (a host that stops
   * between sending and recording may send a message again), so a target should let the
   * receiver de-duplicate (the episode id and the event identify a message). Answer
   * `{ok: false, problem}` (or throw) when the system did not accept the message: the host
   * retries with backoff (30 s, then doubling) for at least 1 hour before giving up. Cut off
   * like every call (15 s, or `timeout_s` when lower; `ctx.signal` says when).
   */
  notify?(ctx: ConnectorContext, message: NotifyMessage): Promise<NotifyResult> | NotifyResult;
}

// ---------------------------------------------------------------------------------------------
// Packs (plugin API 1.x, additive): causes, the read-only check context, verdicts and evidence.
// A pack imports nothing but types from this file; everything it can reach is in CheckContext.
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// The pack library (plugin API 1.4): helpers every pack may use through `ctx.lib`, instead of a
// copy of its own. Versioned with the plugin API: `lib.version` is the API version that offers it.
// ---------------------------------------------------------------------------------------------

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
}

/** What `ctx.lib` offers. */
export interface PackLibrary {
  /** The plugin API version that offers this library. */
  readonly version: string;
  readonly prometheus: PrometheusLibrary;
}

// Connector additions for checks (optional, declared by merging into ConnectorCapabilities).

/** A range question for a metrics connector (`range`). */
export interface ConnectorRangeRequest {
  query: string;
  start: string;
  end: string;
  step_s: number;
}

/** A window of commits asked of a changes connector (`changes`). */
export interface ConnectorChangesRequest {
  /** ISO 8601. */
  since: string;
  /** ISO 8601. */
  until: string;
  /** A folder of the repository (the link's `path`), or omitted for all of it. */
  path?: string;
  /** The most commits answered (default 200). */
  limit?: number;
}

/** What `changes` answers: a failure is data, as for `query`. */
export interface ConnectorChangesResult {
  ok: boolean;
  problem: string | null;
  /** Newest first; `source` and `path` are filled by the host. */
  commits?: Array<Omit<Commit, 'source' | 'path'>>;
}

export interface ConnectorCapabilities {
  /**
   * Before plugin API 1.5: which check capabilities this kind serves (`['metrics']` for a PromQL
   * server with `query` and `range`, `['changes']` for a repository with `changes`). Still
   * honoured; declare them in the manifest's `reads` instead, with their schemas.
   */
  reads?: ReadCapability[];
  /** A read-only PromQL range query (`/api/v1/query_range`); `data` is the API's `data` object. */
  range?(ctx: ConnectorContext, request: ConnectorRangeRequest): Promise<ConnectorQueryResult> | ConnectorQueryResult;
  /** Read-only: the commits in a window, newest first. */
  changes?(ctx: ConnectorContext, request: ConnectorChangesRequest): Promise<ConnectorChangesResult> | ConnectorChangesResult;
}

// ---------------------------------------------------------------------------------------------
// Actions (plugin API 1.2, additive): the only calls in the host that change something outside.
// Only the action path reaches them (host/acting); a check context never can.
// ---------------------------------------------------------------------------------------------

/** One action the host asks a connector to rehearse, perform or undo. */
export interface ActionRequest {
  /** The action kind, one the connector's manifest declares. */
  kind: string;
  /** Its parameters, already validated against the declaration's `params` schema. */
  params: Record<string, unknown>;
  /** The episode it is for. */
  episode: { id: string; service: string; alerts: string[]; url: string | null; summary: string };
  /**
   * Stable for one action of one episode: a connector that can should make `act` idempotent on it
   * (a silence's comment, a branch name), so a retried call after a host restart does nothing twice.
   */
  key: string;
}

/** What `rehearse`, `act` and `undo` answer: a failure is data, as for `test`. */
export interface ActionResult {
  ok: boolean;
  /** Null when `ok`; otherwise why not, in words a person can act on. Never a secret. */
  problem: string | null;
  /** What it did (or, rehearsed, would do), for people: "would silence 3 alerts: ...", "pushed oncall/revert-1a2b3c". */
  shown?: string;
  /**
   * From `rehearse` with `ok: false`: true when this connector cannot rehearse the action with its
   * settings (say, an endpoint that declares no dry runs), as opposed to a rehearsal that failed.
   * The host then goes on without a rehearsal; a failed rehearsal stops the action.
   */
  not_rehearsable?: boolean;
  /**
   * From `act`: what `undo` needs to reverse it (a silence id, a branch name), small plain JSON,
   * kept by the host with the action and handed back to `undo`.
   */
  undo?: Record<string, unknown>;
}

export interface ConnectorCapabilities {
  /** Shows what `act` would do, changing nothing (a dry run). Only for kinds declared `rehearsable`. */
  rehearse?(ctx: ConnectorContext, action: ActionRequest): Promise<ActionResult> | ActionResult;
  /** Performs the action: the one call that changes the outside system. */
  act?(ctx: ConnectorContext, action: ActionRequest): Promise<ActionResult> | ActionResult;
  /** Reverses an action `act` performed, given what it answered in `undo`. Only for kinds declared `reversible`. */
  undo?(ctx: ConnectorContext, action: ActionRequest & { undo: Record<string, unknown> }): Promise<ActionResult> | ActionResult;
}

// The plugin test kit (host/plugins/testkit.ts): for a plugin folder's own tests, never for the
// plugin's code, which imports this module with `import type` only.
export * from './testkit.ts';
