import type { Signal } from '../intake/normalise.ts';
import type { Link } from './estate.schema.ts';
import type { ServiceView } from './estate.model.ts';
import { matches, parseMatchers, type Matcher } from '../matchers.ts';

/**
 * Which rule placed an alert: its own `service` the estate knows, an alert link, a workload
 * link, its own `service` the estate does not know yet (kept, as a match, so it is not lost in
 * `unknown`), or nothing.
 */
export type PlaceRule = 'service' | 'alert_link' | 'workload_link' | 'probe_target' | 'alert_service' | 'none';
export interface Placement {
  /** null: unplaced (grouped under `unknown`). */
  service: string | null;
  rule: PlaceRule;
  certain: boolean;
  /** The link that placed it, for the link rules. */
  link?: Link;
  /** Why an alert was left unplaced when it could have seemed placed (a probe of an address no service has). */
  why?: string;
}

interface Entry {
  service: string;
  matchers: Matcher[];
  link: Link;
  /** For a list with no equality matcher: the literal start of its selecting `=~`, tested before any regular expression runs. */
  prefix?: string;
}

/** The literal characters a regular expression starts with ('' when it starts with a special one or has alternatives). */
function literalPrefix(source: string): string {
  if (source.includes('|')) return '';
  const m = /^[A-Za-z0-9_\-:/@ ]*/.exec(source);
  let p = m === null ? '' : m[0];
  // A quantifier after the last literal character applies to it: leave that character out.
  if (/^[*?{]/.test(source.slice(p.length))) p = p.slice(0, -1);
  return p;
}

/** Matcher links of one kind, indexed by their first equality matcher, the rest scanned. */
class MatcherIndex {
  readonly byPair = new Map<string, Entry[]>();
  readonly byName = new Map<string, Entry[]>();
  /** Lists without an equality matcher, by the label of their selecting `=~` (a missing label never matches it). */
  readonly scanned = new Map<string, Entry[]>();
  /** A workload's name (a unit, a deployment) is looked for among the label values; an alert link's name is the alert's name. */
  readonly #nameIsValue: boolean;

  constructor(nameIsValue: boolean) {
    this.#nameIsValue = nameIsValue;
  }

  add(service: string, link: Link): void {
    if (link.match !== undefined) {
      const p = parseMatchers(link.match);
      if (!p.ok) return;
      const entry = { service, matchers: p.matchers, link };
      const eq = p.matchers.find((m) => m.op === '=');
      if (eq !== undefined) push(this.byPair, `${eq.label}\u0000${eq.value}`, entry);
      else {
        const selecting = p.matchers.find((m) => m.op === '=~' && !m.re!.test(''))!;
        push(this.scanned, selecting.label, { ...entry, prefix: literalPrefix(selecting.value) });
      }
    } else if (link.name !== undefined) {
      push(this.byName, link.name, { service, matchers: [], link });
    }
  }

  /**
   * The best entry for the alert: certain before match, then the first service by name. The
   * alert's own `service` reads as a label `service` when the alert has none, so a link
   * `service="old-name"` makes `old-name` an alias (looked up only when such a link exists).
   */
  find(name: string, labels: Record<string, string>, own: string | null): Entry | null {
    // No link of this kind at all (a new install, an estate of services without links): no key to build per label.
    if (this.byName.size === 0 && this.byPair.size === 0 && this.scanned.size === 0) return null;
    let best: Entry | null = null;
    const consider = (e: Entry) => {
      if (best === null || (e.link.certain && !best.link.certain) || (e.link.certain === best.link.certain && e.service < best.service)) best = e;
    };
    if (!this.#nameIsValue) for (const e of this.byName.get(name) ?? []) consider(e);
    for (const k in labels) {
      if (this.#nameIsValue) for (const e of this.byName.get(labels[k]!) ?? []) consider(e);
      const list = this.byPair.get(`${k}\u0000${labels[k]}`);
      if (list === undefined) continue;
      for (const e of list) if (matches(e.matchers, labels)) consider(e);
    }
    if (own !== null && labels.service === undefined) {
      const aliased = this.byPair.get(`service\u0000${own}`);
      if (aliased !== undefined) {
        const withService = { ...labels, service: own };
        for (const e of aliased) if (matches(e.matchers, withService)) consider(e);
      }
      const scannedAlias = this.scanned.get('service');
      if (scannedAlias !== undefined) {
        const withService = { ...labels, service: own };
        for (const e of scannedAlias) if (own.startsWith(e.prefix!) && matches(e.matchers, withService)) consider(e);
      }
    }
    for (const k in labels) {
      const list = this.scanned.get(k);
      if (list === undefined) continue;
      const v = labels[k]!;
      for (const e of list) if (v.startsWith(e.prefix!) && matches(e.matchers, labels)) consider(e);
    }
    return best;
  }
}

function push<T>(m: Map<string, T[]>, k: string, v: T): void {
  const list = m.get(k);
  if (list === undefined) m.set(k, [v]);
  else list.push(v);
}

/**
 * The estate as an in-memory index, built whole from the services when the estate changes, so
 * placing an alert is a few map look-ups and never a database query.
 */
export class EstateIndex {
  readonly version: number;
  readonly #names = new Set<string>();
  readonly #alerts = new MatcherIndex(false);
  readonly #workloads = new MatcherIndex(true);
  /** Services by their health URL, and by its `host:port` (a probe may name either). */
  readonly #healthUrls = new Map<string, string[]>();
  readonly #healthHosts = new Map<string, string[]>();

  constructor(version: number, services: readonly ServiceView[]) {
    this.version = version;
    for (const s of services) {
      this.#names.add(s.name);
      const url = s.health_url === null ? null : probedUrl(s.health_url);
      if (url !== null) {
        push(this.#healthUrls, url.href, s.name);
        push(this.#healthHosts, url.host, s.name);
      }
      for (const l of s.links) {
        if (l.kind === 'alert') this.#alerts.add(s.name, l);
        else if (l.kind === 'workload') this.#workloads.add(s.name, l);
      }
    }
  }

  get size(): number {
    return this.#names.size;
  }

  resolve(signal: Pick<Signal, 'name' | 'service' | 'labels' | 'context'>): Placement {
    const probed = probeOf(signal);
    if (probed !== null) return this.#placeProbe(signal, probed);
    const own = signal.service;
    if (own !== null && this.#names.has(own)) return { service: own, rule: 'service', certain: true };
    const a = this.#alerts.find(signal.name, signal.labels, own);
    if (a !== null) return { service: a.service, rule: 'alert_link', certain: a.link.certain, link: a.link };
    const w = this.#workloads.find(signal.name, signal.labels, own);
    if (w !== null) return { service: w.service, rule: 'workload_link', certain: w.link.certain, link: w.link };
    if (own !== null) return { service: own, rule: 'alert_service', certain: false };
    return { service: null, rule: 'none', certain: false };
  }

  /**
   * An alert about a probe (blackbox style) names the prober's job, not a service: it goes to the
   * service the estate links it to, else the one whose health URL is the probed address (or, one
   * service alone, its host and port), else nowhere, with the reason; never to a service named
   * after the prober.
   */
  #placeProbe(signal: Pick<Signal, 'name' | 'labels'>, target: string): Placement {
    const a = this.#alerts.find(signal.name, signal.labels, null);
    if (a !== null) return { service: a.service, rule: 'alert_link', certain: a.link.certain, link: a.link };
    const w = this.#workloads.find(signal.name, signal.labels, null);
    if (w !== null) return { service: w.service, rule: 'workload_link', certain: w.link.certain, link: w.link };
    const url = probedUrl(target);
    const exact = url === null ? [] : (this.#healthUrls.get(url.href) ?? []);
    if (exact.length === 1) return { service: exact[0]!, rule: 'probe_target', certain: true };
    const byHost = url === null ? [] : (this.#healthHosts.get(url.host) ?? []);
    if (exact.length === 0 && byHost.length === 1) return { service: byHost[0]!, rule: 'probe_target', certain: false };
    const why =
      exact.length > 1 || byHost.length > 1
        ? `a probe of ${target}, the health URL of several services (${[...new Set([...exact, ...byHost])].slice(0, 5).join(', ')}): link it to one`
        : `a probe of ${target}, which is no service's health URL and no link of the estate names: give the service that address as its health_url, or link the alert`;
    return { service: null, rule: 'none', certain: false, why };
  }
}

/** Label names a prober puts the probed address in. */
const PROBE_TARGET_LABELS = ['instance', 'target'] as const;

/**
 * The address an alert about a probe is about, or null when it is not one: an alert with no
 * `service` label of its own whose rule reads `probe_*` series (its expression), or whose name says
 * it is a probe, or whose `instance` is a URL (a blackbox exporter's relabelled target).
 */
export function probeOf(signal: Pick<Signal, 'name' | 'labels' | 'context'>): string | null {
  const l = signal.labels;
  if (l.service !== undefined && l.service !== '') return null;
  const target = PROBE_TARGET_LABELS.map((k) => l[k]).find((v): v is string => typeof v === 'string' && v !== '');
  if (target === undefined) return null;
  const expression = signal.context?.expression ?? '';
  const isProbe = /\bprobe_[a-z_]+/.test(expression) || /probe|blackbox/i.test(signal.name) || /^[a-z][a-z0-9+.-]*:\/\//i.test(target);
  return isProbe ? target : null;
}

/** A probed address as a URL (a bare `host:port` read as http), normalised for comparison; null when it is none. */
function probedUrl(text: string): URL | null {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  if (!URL.canParse(withScheme)) return null;
  const u = new URL(withScheme);
  u.hash = '';
  if (u.pathname.length > 1 && u.pathname.endsWith('/')) u.pathname = u.pathname.replace(/\/+$/, '');
  return u;
}
