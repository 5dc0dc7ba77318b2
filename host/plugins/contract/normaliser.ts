/** The plugin contract: normalisers, and the common alert shape they produce. Imported through host/plugins/contract.ts. */

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
