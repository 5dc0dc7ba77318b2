import { createHash } from 'node:crypto';
import { AppError } from '../errors.ts';
import { ajv } from '../json-schema.ts';
import { canonicalJson } from '../ledger/entry.ts';
import type { AlertContext, AlertSeverity, AlertStatus, NormalisedAlert, NormaliserPlugin } from '../plugins/contract.ts';
import type { LoadedPlugin } from '../plugins/loader.ts';
import { clip } from '../text.ts';

/** An alert as the service keeps it: flat string labels with `siem`, and its fingerprint. */
export interface Signal {
  fingerprint: string;
  name: string;
  severity: AlertSeverity;
  status: AlertStatus;
  service: string | null;
  labels: Record<string, string>;
  summary: string;
  id: string | null;
  /** What the tool said beyond the labels (when the condition began, the rule's expression); absent when it said nothing. */
  context?: AlertContext;
  /** Set by placement: why the alert was left unplaced although it named a service (recorded with the push). */
  unplaced?: string;
}

/** The catch-all normaliser: any source word that no other normaliser claims. */
export const GENERIC = 'generic';
const MAX_ALERTS = 1000;
/** Alerts one poll may answer (a pushed body is limited to MAX_ALERTS). */
const MAX_POLLED = 10_000;
/** The label the host stamps on polled alerts: the name of the connector that polled them. */
export const POLLER_LABEL = 'poller';
const MAX_LABELS = 200;
const MAX_DEPTH = 8;
/** Lengths the host clips to, for every normaliser alike. */
const MAX_NAME = 500;
const MAX_SERVICE = 200;
const MAX_ID = 500;
const MAX_EXPRESSION = 2000;

const checkAlert = ajv.compile<NormalisedAlert>({
  type: 'object',
  required: ['name', 'severity', 'status', 'service', 'labels', 'summary', 'id'],
  properties: {
    name: { type: 'string', minLength: 1 },
    severity: { enum: ['critical', 'warning', 'info'] },
    status: { enum: ['firing', 'resolved'] },
    service: { type: ['string', 'null'] },
    labels: { type: 'object' },
    summary: { type: 'string' },
    id: { type: ['string', 'null'] },
    identity: { type: 'array', items: { type: 'string' } },
    context: { type: 'object' },
  },
});

/**
 * Picks a normaliser for a source word and turns bodies into signals. The host, not the plugin,
 * flattens labels, stamps `labels.siem` and computes fingerprints, so no plugin can get them wrong.
 */
export class Normalisers {
  readonly #byWord = new Map<string, { name: string; plugin: NormaliserPlugin }>();
  /** Specific normalisers first (by name), the generic one last: the order `auto` asks them in. */
  readonly #detectOrder: Array<{ name: string; plugin: NormaliserPlugin }> = [];

  constructor(plugins: ReadonlyArray<LoadedPlugin>) {
    const normalisers = plugins
      .filter((p) => p.kind === 'normaliser')
      .sort((a, b) => (a.name === GENERIC ? 1 : b.name === GENERIC ? -1 : a.name.localeCompare(b.name)));
    for (const p of normalisers) {
      const entry = { name: p.name, plugin: p.plugin as NormaliserPlugin };
      this.#detectOrder.push(entry);
      for (const word of [p.name, ...(p.manifest.aliases ?? [])]) if (!this.#byWord.has(word)) this.#byWord.set(word, entry);
    }
  }

  /** The normaliser names, in the order `auto` tries them. */
  get names(): string[] {
    return this.#detectOrder.map((n) => n.name);
  }

  /** A source word as a metric label: the word when a normaliser or alias claims it (or `auto`), else `generic`: a closed set. */
  sourceLabel(source: string): string {
    const word = source.toLowerCase();
    return word === 'auto' || this.#byWord.has(word) ? word : GENERIC;
  }

  /** The normaliser that reads a source word: its own, else the generic one (`auto` was stored as what it recognised). */
  nameOf(source: string): string {
    return (this.#byWord.get(source.toLowerCase()) ?? this.#byWord.get(GENERIC))?.name ?? GENERIC;
  }

  /**
   * The signals in `body` pushed to `/v1/alerts/<source>`: all of them, or 400
   * `unreadable_alert` for the whole body (a batch is accepted or refused whole).
   */
  normalise(source: string, body: unknown): Signal[] {
    const word = source.toLowerCase();
    const chosen =
      word === 'auto' ? this.#detectOrder.find((n) => safely(() => n.plugin.detect(body), false)) : (this.#byWord.get(word) ?? this.#byWord.get(GENERIC));
    if (chosen === undefined) throw new AppError('unreadable_alert', word === 'auto' ? 'no normaliser recognises this body' : `no normaliser for ${word}`);
    const alerts = safely(() => chosen.plugin.normalise(body), null);
    if (!Array.isArray(alerts) || alerts.length === 0) throw new AppError('unreadable_alert', `the body is not a ${chosen.name} alert`);
    if (alerts.length > MAX_ALERTS) throw new AppError('unreadable_alert', `at most ${MAX_ALERTS} alerts per push`);
    // An alias names the tool more exactly than the normaliser does (grafana, not alertmanager);
    // `auto` and unknown words fall back to what was recognised or said.
    const siem = word === 'auto' ? chosen.name : word;
    return alerts.map((a, i) => toSignal(chosen.name, siem, a, i));
  }

  /**
   * The signals of alerts a connector polled (already in the common shape): the same checks,
   * flattening, clipping and fingerprint rules as pushed alerts, with the connector's kind as the
   * source word (`labels.siem`, and the name hashed for alerts without an id: a polled
   * `alertmanager` alert gets the fingerprint a pushed one gets). The connector's name is stamped
   * as `labels.poller` after the fingerprint is computed, so it never changes the fingerprint;
   * a successful poll later resolves what it no longer returns by that label. All or nothing:
   * one unreadable alert refuses the whole poll.
   */
  polled(kind: string, connector: string, alerts: unknown[]): Signal[] {
    if (alerts.length > MAX_POLLED) throw new AppError('unreadable_alert', `at most ${MAX_POLLED} alerts per poll; narrow the connector's filter`);
    const word = kind.toLowerCase();
    return alerts.map((a, i) => {
      const s = toSignal(word, word, a, i);
      return { ...s, labels: { ...s.labels, [POLLER_LABEL]: connector } };
    });
  }
}

function safely<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}

function toSignal(normaliser: string, siem: string, alert: unknown, index: number): Signal {
  if (!checkAlert(alert)) throw new AppError('unreadable_alert', `alert ${index + 1}: the ${normaliser} normaliser could not read it`);
  const labels = flattenLabels(alert.labels);
  delete labels.siem;
  const name = clip(alert.name, MAX_NAME);
  // An id too long to keep is still the tool's identity: its hash stands in for it.
  const id = alert.id === null || alert.id === '' ? null : clip(alert.id, Number.MAX_SAFE_INTEGER);
  const service = alert.service === null || alert.service.trim() === '' ? null : clip(alert.service, MAX_SERVICE);
  const fingerprint =
    id === null
      ? hashFingerprint(normaliser, name, pick(labels, alert.identity), service)
      : id.length <= MAX_ID
        ? id
        : createHash('sha256').update(id).digest('hex');
  return {
    fingerprint,
    name,
    severity: alert.severity,
    status: alert.status,
    service,
    labels: { ...labels, siem },
    summary: clip(alert.summary, Number.MAX_SAFE_INTEGER),
    id: id === null ? null : clip(id, MAX_ID),
    ...contextOf(alert.context),
  };
}

/**
 * The alert's context as the host keeps it: a valid time (as ISO 8601) and an expression of at
 * most 2,000 characters; anything else a plugin put there is dropped, never refused.
 */
function contextOf(given: unknown): { context?: AlertContext } {
  if (typeof given !== 'object' || given === null) return {};
  const c = given as Record<string, unknown>;
  const out: AlertContext = {};
  if (typeof c.starts_at === 'string' && !Number.isNaN(Date.parse(c.starts_at))) out.starts_at = new Date(Date.parse(c.starts_at)).toISOString();
  if (typeof c.expression === 'string' && c.expression.trim() !== '' && c.expression.length <= MAX_EXPRESSION) out.expression = c.expression;
  return out.starts_at === undefined && out.expression === undefined ? {} : { context: out };
}

/**
 * Flat string labels: nested objects become dotted keys, numbers and booleans strings, arrays
 * comma-joined, nulls dropped. Past 200 labels or 8 levels the rest is left out.
 */
export function flattenLabels(value: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (v: unknown, key: string, depth: number): void => {
    if (Object.keys(out).length >= MAX_LABELS || v === null || v === undefined) return;
    if (Array.isArray(v)) {
      const parts = v.filter((x) => x !== null && typeof x !== 'object').map(String);
      if (parts.length > 0) out[key] = parts.join(',');
      return;
    }
    if (typeof v === 'object') {
      if (depth >= MAX_DEPTH) return;
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) walk(x, key === '' ? k : `${key}.${k}`, depth + 1);
      return;
    }
    if (key !== '') out[clip(key, Number.MAX_SAFE_INTEGER)] = clip(String(v), Number.MAX_SAFE_INTEGER);
  };
  walk(value, '', 0);
  return out;
}

function pick(labels: Record<string, string>, keys: string[] | undefined): Record<string, string> {
  if (keys === undefined) return labels;
  return Object.fromEntries(keys.filter((k) => k in labels).map((k) => [k, labels[k]!]));
}

/**
 * sha256 of the normaliser, the name, the identifying labels and the service (canonical JSON),
 * 32 hex digits. The service is part of the identity: the same alert name firing for two
 * services is two alerts. (Without a service the text is what it always was.)
 */
export function hashFingerprint(normaliser: string, name: string, labels: Record<string, string>, service: string | null = null): string {
  const identity = service === null ? { labels, name, source: normaliser } : { labels, name, service, source: normaliser };
  return createHash('sha256').update(canonicalJson(identity)).digest('hex').slice(0, 32);
}
