/** The plugin contract, part one: what every plugin has (manifest, context, log). Imported through host/plugins/contract.ts. */
import type { ConnectorPlugin } from './connector.ts';
import type { NormaliserPlugin } from './normaliser.ts';
import type { PackPlugin } from './pack.ts';

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

/** Text helpers (plugin API 1.6): `ctx.lib.text`. */
export interface TextLibrary {
  /**
   * `text` cut to `max` UTF-16 units without splitting a surrogate pair, `…` added when cut; a
   * lone surrogate already in it becomes U+FFFD (the ledger refuses text that is not
   * well-formed Unicode).
   */
  cut(text: string, max: number): string;
}

/** A label matcher's operator, as in Prometheus. */
export type MatchOp = '=' | '!=' | '=~' | '!~';

/** One label matcher of a list such as `job="payments-api", namespace=~"pay.*"`. */
export interface LabelMatcher {
  /** The label's name; names may hold dots (`kubernetes.namespace`), as the normalisers flatten nested labels. */
  readonly label: string;
  readonly op: MatchOp;
  /** The value as written, unquoted and unescaped; for `=~` and `!~` an RE2 expression matching the whole value. */
  readonly value: string;
}

/** Prometheus-style label matcher lists (plugin API 1.6): `ctx.lib.matchers`, the host's own parser. */
export interface MatcherLibrary {
  /**
   * The matchers of a list (braces optional; a value without comma or space may be unquoted),
   * or what is wrong with it. Regular expressions are RE2, as Prometheus and Alertmanager read
   * them, checked here. A list needs at least one matcher that selects (`=`, or `=~` not
   * matching the empty value).
   */
  parse(text: string): { ok: true; matchers: LabelMatcher[] } | { ok: false; problem: string };
  /** Whether labels satisfy every matcher of a parsed list (a missing label reads as the empty value). */
  matches(matchers: readonly LabelMatcher[], labels: Readonly<Record<string, string>>): boolean;
}

/** What `ctx.lib` offers every plugin (plugin API 1.6): pure helpers the host shares instead of each plugin copying them. */
export interface PluginLibrary {
  /** The plugin API version that offers this library. */
  readonly version: string;
  readonly text: TextLibrary;
  readonly matchers: MatcherLibrary;
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

/** The object an entry module default-exports, by kind. */
export interface PluginByKind {
  /** A `normaliser` entry default-exports this. */
  normaliser: NormaliserPlugin;
  /** A `connector` entry default-exports this. */
  connector: ConnectorPlugin;
  /** A `pack` entry default-exports this. */
  pack: PackPlugin;
}
