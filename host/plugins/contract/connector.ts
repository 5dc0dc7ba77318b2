/** The plugin contract: connectors and their capabilities (reads, queries, discovery, notification, actions). Imported through host/plugins/contract.ts. */
import type { PluginContext, PluginLibrary } from './common.ts';
import type { AlertSeverity, NormalisedAlert } from './normaliser.ts';
import type { Commit, ReadCapability } from './pack.ts';

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
   * The plugin library (plugin API 1.6): text and label-matcher helpers the host shares, so no
   * connector writes its own (a connector declaring `api: ^1.6.0` may rely on it; the test kit's
   * `connectorContext` hands in the same).
   */
  lib: PluginLibrary;
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

/**
 * The optional methods a connector may offer beyond `test`, declared once each. A connector's
 * default export is a {@link ConnectorPlugin} and may also carry these; the host checks each is a
 * function before it calls it, and answers "not supported by this kind" otherwise.
 *
 * Every method here must be read-only: it may look, never change anything in the outside system
 * (`notify` sends a message; `act` and `undo` are the only calls that change it, and only the
 * action path reaches them). The host calls them with a {@link ConnectorContext}, cuts each call
 * off at its timeout, and turns a throw or a rejected promise into a problem; a plugin can never
 * take the host down. Each member is optional, so a connector written against the first version
 * of this contract keeps loading and working.
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
  /**
   * Answers one read of a capability the manifest declares in `reads` (plugin API 1.5).
   * Read-only like every read; cut off at the check's deadline (`ctx.signal`).
   */
  read?(ctx: ConnectorContext, request: ConnectorReadRequest): Promise<ConnectorReadResult> | ConnectorReadResult;
  /**
   * Proposes the services the system knows of (`POST /v1/discover`). Read-only like every
   * capability. The host cuts the call off at `SERVICE_DISCOVER_TIMEOUT_S` (45 s by default;
   * `ctx.timeoutMs` says when) and aborts `ctx.signal`; a throw becomes the connection's problem.
   * What it answers is kept as candidates until a person adds them.
   */
  discover?(ctx: ConnectorContext): Promise<DiscoveryResult> | DiscoveryResult;
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
  /** Shows what `act` would do, changing nothing (a dry run). Only for kinds declared `rehearsable`. */
  rehearse?(ctx: ConnectorContext, action: ActionRequest): Promise<ActionResult> | ActionResult;
  /** Performs the action: the one call that changes the outside system. */
  act?(ctx: ConnectorContext, action: ActionRequest): Promise<ActionResult> | ActionResult;
  /** Reverses an action `act` performed, given what it answered in `undo`. Only for kinds declared `reversible`. */
  undo?(ctx: ConnectorContext, action: ActionRequest & { undo: Record<string, unknown> }): Promise<ActionResult> | ActionResult;
}

/** A connector's default export with the optional capabilities: what vendors should type it as. */
export type ConnectorPluginWithCapabilities = ConnectorPlugin & ConnectorCapabilities;

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
