import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Clock } from '../clock.ts';
import type { CandidateRow } from '../discovery/discovery.model.ts';
import type { Principal } from '../identity/principal.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { EstateRepo, FoundDoc, SuggestionRow } from './estate.repo.ts';
import type { EstateService } from './estate.service.ts';
import type { Link, Origin } from './estate.schema.ts';

/** Discovery, as the build uses it (the discovery area's public service). */
export interface Discovery {
  start(who: Principal): Promise<{ id: string }>;
  idle(): Promise<void>;
  candidates(): Promise<CandidateRow[]>;
}
/** Episodes opened since a time, per service (the episodes area), for co-firing. */
export interface EpisodeOpenings {
  openedSince(sinceMs: number): Promise<Array<{ service: string; t_open_ms: number }>>;
}
/** Services named in `human.deploy` events (the ledger's public reading). */
export interface Deploys {
  recent(): Promise<Array<{ service: string; repository: string | null; at: string }>>;
}

/** The services alerts named (the intake area's held set). */
export interface SeenAlerts {
  servicesNamed(): Promise<Array<{ service: string; count: number }>>;
}

export interface BuildDeps {
  repo: EstateRepo;
  alerts: SeenAlerts;
  estate: EstateService;
  discovery: Discovery;
  episodes: EpisodeOpenings;
  deploys: Deploys;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  /** SERVICE_DEBOUNCE_S: two services whose episodes open this close together co-fire. */
  debounceS: number;
}

/** Co-firing is counted over this long. */
export const CO_FIRING_DAYS = 30;
/** Fewer co-firings than this suggest nothing. */
const CO_FIRING_MIN = 3;

const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

/**
 * `oncall estate build` and `POST /v1/estate/build`: a discovery job (its progress at
 * `GET /v1/jobs/{id}`), then the estate assembled from every candidate kept, the services alerts
 * named, the `human.deploy` events and the episodes of the last 30 days. What it finds never adds a service: names stay
 * candidates until a person adds them, and overrides win over it.
 */
export class EstateBuilder {
  readonly #d: BuildDeps;
  #running: Promise<void> | null = null;

  constructor(deps: BuildDeps) {
    this.#d = deps;
  }

  /** Starts the job and answers it at once; 409 `discovery_running` while one runs. */
  async start(who: Principal): Promise<{ id: string }> {
    const job = await this.#d.discovery.start(who);
    const run = (async () => {
      await this.#d.discovery.idle();
      await this.assemble(job.id, who.actor);
    })().catch((err: unknown) => this.#d.log.error({ err, job: job.id }, 'estate build failed'));
    const tracked: Promise<void> = run.then(() => {
      if (this.#running === tracked) this.#running = null;
    });
    this.#running = tracked;
    return job;
  }

  async idle(): Promise<void> {
    while (this.#running !== null) await this.#running;
  }

  /** Assembles what is known now into the estate's findings and suggestions (one transaction). */
  async assemble(jobId: string | null, actor: string): Promise<{ found: number; suggestions: number }> {
    const found = new Map<string, FoundDoc>();
    const doc = (name: string): FoundDoc => {
      let d = found.get(name);
      if (d === undefined) found.set(name, (d = { owner: null, team: null, technologies: [], links: [], sources: [] }));
      return d;
    };
    const link = (d: FoundDoc, l: Omit<Link, 'certain'>) => {
      const key = JSON.stringify([l.kind, l.match, l.connector, l.path, l.name]);
      const i = d.links.findIndex((x) => JSON.stringify([x.kind, x.match, x.connector, x.path, x.name]) === key);
      const full = { ...l, certain: false } as Link;
      if (i === -1) d.links.push(full);
      else if (rank(l.origin) < rank(d.links[i]!.origin)) d.links[i] = full;
    };
    for (const c of await this.#d.discovery.candidates()) {
      const d = doc(c.name);
      for (const e of c.evidence) {
        const how = String(e.source ?? c.kind);
        if (!d.sources.some((s) => s.connector === c.source && s.how === how)) d.sources.push({ connector: c.source, how });
        const p = typeof e.path === 'string' ? e.path : null;
        if (c.kind === 'git' && p !== null) {
          const folder = how === 'manifest' ? path.posix.dirname(p) : p;
          link(d, {
            kind: 'repository',
            connector: c.source,
            path: folder === '.' ? '/' : folder,
            origin: how === 'manifest' ? 'deployed' : how === 'codeowners' ? 'codeowners' : 'name',
          });
        }
        if (c.kind === 'prometheus' && typeof e.label === 'string')
          link(d, { kind: 'workload', connector: c.source, match: `${e.label}="${c.name}"`, origin: 'label' });
        const owner = typeof e.owner === 'string' ? e.owner : null;
        if (owner !== null) {
          if (EMAIL.test(owner)) d.owner ??= owner;
          else d.team ??= owner.replace(/^group:/, '');
        }
        for (const o of Array.isArray(e.owners) ? (e.owners as unknown[]) : []) {
          if (typeof o !== 'string') continue;
          if (EMAIL.test(o)) d.owner ??= o;
          else d.team ??= o.replace(/^@/, '');
        }
      }
    }
    // A name alerts gave as their service: a candidate with a certain alert link (its label),
    // unless it is a service already (a service's own name needs no link).
    const added = new Set(await this.#d.estate.addedInOrder());
    for (const { service } of await this.#d.alerts.servicesNamed()) {
      if (added.has(service) || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/.test(service)) continue;
      const d = doc(service);
      if (!d.sources.some((s) => s.how === 'alert')) d.sources.push({ connector: null, how: 'alert' });
      link(d, { kind: 'alert', match: `service="${service}"`, origin: 'label' });
    }
    for (const dep of await this.#d.deploys.recent()) {
      const d = doc(dep.service);
      if (!d.sources.some((s) => s.how === 'deploy')) d.sources.push({ connector: null, how: 'deploy' });
      if (dep.repository !== null) link(d, { kind: 'repository', name: dep.repository, origin: 'deployed' });
    }
    const suggestions = await this.#suggest(found);
    const at = this.#d.clock.now().toISOString();
    await this.#d.ledger.transact(async (trx, record) => {
      await this.#d.repo.lock(trx);
      await this.#d.repo.replaceFound(trx, found);
      await this.#d.repo.putSuggestions(trx, suggestions);
      await this.#d.repo.bump(trx, { at, job: jobId });
      await record({
        type: 'estate.built',
        actor,
        reason: `estate built: ${found.size} name(s) found, ${suggestions.length} suggestion(s)`,
        data: { job: jobId, found: found.size, suggestions: suggestions.length },
      });
    });
    await this.#d.estate.changed();
    return { found: found.size, suggestions: suggestions.length };
  }

  /** Likely dependencies: services sharing a database link, and services whose episodes keep opening together. */
  async #suggest(found: Map<string, FoundDoc>): Promise<Array<Omit<SuggestionRow, 'state' | 'decided_by'>>> {
    const view = await this.#d.estate.estate();
    const known = new Set([...view.services.map((s) => s.name), ...found.keys()]);
    const databases = new Map<string, Set<string>>();
    for (const s of view.services)
      for (const l of s.links) if (l.kind === 'database' && l.name !== undefined) databases.set(l.name, (databases.get(l.name) ?? new Set()).add(s.name));
    for (const [name, d] of found)
      for (const l of d.links) if (l.kind === 'database' && l.name !== undefined) databases.set(l.name, (databases.get(l.name) ?? new Set()).add(name));
    const out = new Map<string, Omit<SuggestionRow, 'state' | 'decided_by'>>();
    const at = this.#d.clock.now().toISOString();
    const add = (a: string, b: string, evidence: Record<string, unknown>, score: number) => {
      const [service, depends_on] = a < b ? [a, b] : [b, a];
      const id = createHash('sha256').update(`${service}\u0000${depends_on}`).digest('hex').slice(0, 16);
      const s = out.get(id) ?? { id, service, depends_on, evidence: [], score: 0, updated_at: at };
      s.evidence.push(evidence);
      s.score = Math.min(1, Math.round((s.score + score) * 100) / 100);
      out.set(id, s);
    };
    for (const [db, users] of databases) {
      const list = [...users].sort();
      for (let i = 0; i < list.length; i++) for (let j = i + 1; j < list.length; j++) add(list[i]!, list[j]!, { kind: 'shared_database', database: db }, 0.5);
    }
    const since = this.#d.clock.now().getTime() - CO_FIRING_DAYS * 86_400_000;
    const openings = (await this.#d.episodes.openedSince(since)).filter((o) => known.has(o.service)).sort((a, b) => a.t_open_ms - b.t_open_ms);
    const window = this.#d.debounceS * 1000;
    const together = new Map<string, number>();
    const count = new Map<string, number>();
    for (let i = 0; i < openings.length; i++) {
      const o = openings[i]!;
      count.set(o.service, (count.get(o.service) ?? 0) + 1);
      const seen = new Set<string>();
      for (let j = i + 1; j < openings.length && openings[j]!.t_open_ms - o.t_open_ms <= window; j++) {
        const p = openings[j]!;
        if (p.service === o.service || seen.has(p.service)) continue;
        seen.add(p.service);
        const k = o.service < p.service ? `${o.service}\u0000${p.service}` : `${p.service}\u0000${o.service}`;
        together.set(k, (together.get(k) ?? 0) + 1);
      }
    }
    for (const [k, n] of together) {
      if (n < CO_FIRING_MIN) continue;
      const [a, b] = k.split('\u0000') as [string, string];
      const share = n / Math.min(count.get(a) ?? n, count.get(b) ?? n);
      add(a, b, { kind: 'co_firing', times: n, days: CO_FIRING_DAYS, window_s: this.#d.debounceS }, Math.min(1, share));
    }
    return [...out.values()];
  }
}

const ORDER: Origin[] = ['override', 'confirmed', 'label', 'setting', 'deployed', 'codeowners', 'name'];
const rank = (o: Origin): number => ORDER.indexOf(o);
