/**
 * The plugin contract: the only host module that code in `plugins/` and `packs/` may import
 * (and then only with `import type`). Everything a plugin can rely on is declared here, so the
 * host's internals can change without breaking a vendor's plugin.
 *
 * A plugin is a folder with a `plugin.json` (see {@link PluginManifest} and
 * `host/plugins/manifest.schema.json`) whose `entry` module default-exports the plugin object:
 * a {@link NormaliserPlugin}, {@link ConnectorPlugin} or {@link PackPlugin} according to `kind`.
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

/** A pack bundles checks; their shape is settled by a later version of this contract. */
export interface PackPlugin {
  /** The checks the pack contributes. */
  checks: unknown[];
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
