import type { Link } from '../estate/estate.schema.ts';
import type { ServiceView } from '../estate/estate.model.ts';
import { matches, parseMatchers, type Matcher } from '../matchers.ts';
import type { Performer, Proposal } from './proposal.ts';

/**
 * Action kinds that act on one alert in the tool it came from, not on the service: their scope
 * is that alert. A `silence` names the alert (`alert`, its fingerprint) and the matchers that
 * select it (`matchers`).
 */
export const ALERT_SCOPED = new Set(['silence']);

/** Labels the host stamps on an alert (the tool never had them): never part of a silence. */
const HOST_LABELS = new Set(['siem', 'poller']);

/** An alert of the episode, as the scope reads it. */
export interface ScopedSignal {
  fingerprint: string;
  name: string;
  /** The source word it came in under (`labels.siem`): `alertmanager`, `grafana`, `generic`, ... */
  source: string;
  labels: Record<string, string>;
}

export interface ScopeInputs {
  /** The episode's service. */
  service: string;
  view: ServiceView | null;
  signals: ScopedSignal[];
  /** Every configured connector that performs the proposal's action kind (healthy or not). */
  performers: Performer[];
  /** Which normaliser reads a source word (`grafana` → `alertmanager`): the kind of tool the alert came from. */
  normaliserOf(source: string): string;
}

/** Bounded: the proposal as it will run (its params and connector narrowed); else why not. */
export type Scope = { bounded: true; proposal: Proposal; detail: string } | { bounded: false; detail: string };

/**
 * Whether an action is no wider than the episode's service, and the proposal narrowed to that
 * bound. An alert-scoped action (a silence) must name one alert of the episode and be sent only
 * to the connector that alert came from: the poller that read it, else a connector of the kind
 * its normaliser reads (a pushed generic alert came from no Alertmanager: no silence); its
 * matchers must be exactly that alert's own labels, to which the matchers of the estate link
 * that places the alert on the service are added (an alert that names no label holding the
 * service and that no link of the service matches cannot be bounded). Any other kind acts on
 * the service through a connector chosen for it (docs/acting.md); its scope is the service.
 */
export function scopeOf(p: Proposal, s: ScopeInputs): Scope {
  if (!ALERT_SCOPED.has(p.action)) return { bounded: true, proposal: p, detail: `${p.action} on ${s.service} via ${p.connector}` };
  const refuse = (why: string): Scope => ({ bounded: false, detail: `the ${p.action} cannot be bounded to ${s.service}: ${why}` });
  const fp = p.params.alert;
  if (typeof fp !== 'string') return refuse('it names no alert of the episode (params.alert)');
  const signal = s.signals.find((x) => x.fingerprint === fp);
  if (signal === undefined) return refuse(`alert ${fp} is not one of the episode's`);

  const poller = signal.labels.poller;
  const performer = s.performers.find((x) => x.name === (poller ?? p.connector));
  if (poller !== undefined) {
    if (performer === undefined || performer.fault !== null)
      return refuse(`${signal.name} was polled by connector ${poller}, which cannot perform ${p.action}${performer?.fault ? ` (${performer.fault})` : ''}`);
  } else {
    const tool = s.normaliserOf(signal.source);
    if (performer === undefined || performer.kind !== tool)
      return refuse(`${signal.name} was pushed as a ${signal.source} alert, not by a ${performer?.kind ?? 'connector'} such as ${p.connector}`);
  }

  const text = p.params.matchers;
  if (typeof text !== 'string') return refuse('it has no matchers');
  const parsed = parseMatchers(text);
  if (!parsed.ok) return refuse(`its matchers cannot be read: ${parsed.problem}`);
  const own = Object.entries(signal.labels).filter(([k]) => !HOST_LABELS.has(k));
  const equal = new Map(parsed.matchers.filter((m) => m.op === '=').map((m) => [m.label, m.value]));
  const missing = own.filter(([k, v]) => equal.get(k) !== v).map(([k]) => k);
  if (missing.length > 0)
    return refuse(`its matchers leave out labels of ${signal.name} (${missing.slice(0, 10).join(', ')}): a silence names every label of its alert`);
  if (!matches(parsed.matchers, signal.labels)) return refuse(`its matchers do not select ${signal.name} itself`);

  const placing = placingMatchers(signal, s.service, s.view);
  if (placing === null) return refuse(`no label of ${signal.name} names ${s.service} and no alert or workload link of ${s.service} matches it`);
  const have = new Set(parsed.matchers.map(key));
  const added = placing.filter((m) => !have.has(key(m)));
  const matchers = [text, ...added.map(shown)].join(',');
  const connector = performer.name;
  return {
    bounded: true,
    proposal: { ...p, connector, params: { ...p.params, matchers } },
    detail: `${signal.name} of ${s.service} only (${matchers}), via ${connector}, the ${poller === undefined ? `${performer.kind} it came from` : 'connector that polled it'}`,
  };
}

/**
 * The matchers that place the alert on the service: those of an alert or workload link of the
 * service that matches it (certain links first), else the label of the alert that holds the
 * service's name; null when neither does.
 */
function placingMatchers(signal: ScopedSignal, service: string, view: ServiceView | null): Matcher[] | null {
  const links = (view?.links ?? []).filter((l) => l.kind === 'alert' || l.kind === 'workload').sort((a, b) => Number(b.certain) - Number(a.certain));
  for (const l of links) {
    const m = linkMatchers(l, signal);
    if (m !== null) return m;
  }
  const label = Object.keys(signal.labels)
    .sort()
    .find((k) => !HOST_LABELS.has(k) && signal.labels[k] === service);
  return label === undefined ? null : [{ label, op: '=', value: service }];
}

function linkMatchers(l: Link, signal: ScopedSignal): Matcher[] | null {
  if (l.match !== undefined) {
    const p = parseMatchers(l.match);
    return p.ok && matches(p.matchers, signal.labels) ? p.matchers : null;
  }
  if (l.name === undefined) return null;
  if (l.kind === 'alert') return signal.name === l.name ? [{ label: 'alertname', op: '=', value: l.name }] : null;
  const label = Object.keys(signal.labels)
    .sort()
    .find((k) => !HOST_LABELS.has(k) && signal.labels[k] === l.name);
  return label === undefined ? null : [{ label, op: '=', value: l.name }];
}

const key = (m: Matcher): string => `${m.label}\u0000${m.op}\u0000${m.value}`;
const shown = (m: Matcher): string => `${m.label}${m.op}"${m.value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
