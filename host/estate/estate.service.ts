import { createHash } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Principal } from '../identity/principal.ts';
import type { Signal } from '../intake/normalise.ts';
import type { Placed, ServiceResolver } from '../intake/placement.ts';
import type { Ledger, RecordEvent } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import { checkVersion, takeBack, type Revision, type Revisions } from '../settings/revisions.ts';
import type { Trx } from '../storage/db.ts';
import type { EstateFile } from './estate.file.ts';
import { assemble, type CandidateView, type ServiceView } from './estate.model.ts';
import type { EstateRepo, OverrideRow, SuggestionRow } from './estate.repo.ts';
import { validateOverrides, type OverrideEntry } from './estate.schema.ts';
import { checkSettingsProblem, type CauseSettingsLookup } from './check-settings.ts';
import { EstateIndex, type Placement } from './resolver.ts';
import { guardedFields, type GuardedFields } from './estate-guard.ts';

/** The name of the overrides document's revision (in `settings`). */
const REVISION = 'estate.overrides';
/** How long a host process trusts its index before it asks the database for the estate's version. */
export const FRESH_MS = 1000;
/** Unplaced alerts listed in `GET /v1/estate`. */
const UNPLACED_LISTED = 200;

/** Whether an e-mail is a person of this install (the identity area). */
export interface PersonDirectory {
  isPerson(email: string, trx?: Trx): Promise<boolean>;
}
/** The licence in force: its tier and how many services it allows (null: unlimited). */
export interface LicenceTier {
  /** Read in `trx` when given (the keychain's apply runs in its own transaction). */
  limit(trx?: Trx): Promise<{ tier: string | null; services: number | null }>;
}
/** Alerts held with no service, by name and source, most frequent first (the intake area). */
export interface UnplacedAlert {
  source: string;
  name: string;
  count: number;
  last_seen: string;
}
export interface UnplacedAlerts {
  unplaced(limit: number): Promise<UnplacedAlert[]>;
  /** The services alerts were placed under (their own `service` included), with their counts. */
  servicesNamed(): Promise<Array<{ service: string; count: number }>>;
}

/** A change of the overrides that waits for two approvals (estate-guard.ts), as the approval request keeps it. */
export interface ProposedChange {
  service: string;
  /** The service's entry when the change was asked for (approval applies only onto this). */
  before: OverrideEntry;
  /** The entry asked for; null removes the service. */
  after: OverrideEntry | null;
  fields: GuardedFields;
}

/** What the estate needs of governance's approvals (app.ts adapts the ApprovalsService). */
export interface GuardedChanges {
  /** Every pending change request, one per service. */
  list(): Promise<Array<{ id: string; change: ProposedChange }>>;
  /** The pending change request of `service`, locked for the rest of `trx`, or null. */
  pending(trx: Trx, service: string): Promise<{ id: string } | null>;
  /** Opens a request for `change` in the change's transaction; two owners or admins other than the asker decide it. */
  open(
    trx: Trx,
    record: RecordEvent,
    ask: { change: ProposedChange; summary: string; asker: { actor: string; by: string } },
  ): Promise<{ id: string; expires_at: string }>;
  /** What approval does, in the deciding transaction. */
  onApproved(
    fn: (trx: Trx, record: RecordEvent, change: ProposedChange, request: { id: string; requested_by: string }, decider: string) => Promise<void>,
  ): void;
}

export interface EstateDeps {
  repo: EstateRepo;
  /** Governance's approvals: without them a guarded change is refused (the CLI never makes one). */
  changes?: GuardedChanges;
  revisions: Revisions;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  people: PersonDirectory;
  licence: LicenceTier;
  file: EstateFile;
  unplaced: UnplacedAlerts;
  /** The loaded causes' settings: `check_settings` are checked against them (absent: not checked, as in the CLI). */
  causeSettings?: CauseSettingsLookup;
}

export interface EstateView {
  services: ServiceView[];
  candidates: CandidateView[];
  unplaced: UnplacedAlert[];
  built_at: string | null;
  version: number;
}

export interface OverridesView extends Revision {
  services: Record<string, OverrideEntry>;
  /** `file` when estate.json manages them (PUT answers 409), else `api`. */
  source: 'file' | 'api';
  /** Changes waiting for two approvals (a tier lowered, a tier-1 or tier-2 service's approvers changed), by service. */
  pending: Array<{ service: string; request_id: string; fields: GuardedFields }>;
}

interface Snapshot {
  version: number;
  built_at: string | null;
  overrides: OverrideRow[];
  services: ServiceView[];
  candidates: CandidateView[];
  byName: Map<string, ServiceView>;
  index: EstateIndex;
}

const tierName = (t: string | null): string => (t === null ? 'no' : t[0]!.toUpperCase() + t.slice(1));

/**
 * The estate: services people added, over what builds found; the overrides document; the
 * suggested dependencies; and the resolver that places every alert. The resolver is an
 * in-memory index rebuilt when the estate's version (one row, bumped by every change) moves:
 * at once in the process that made the change, within FRESH_MS in the others.
 */
export class EstateService implements ServiceResolver {
  readonly #d: EstateDeps;
  #snap: Snapshot | null = null;
  #checkedMs = -Infinity;
  #loading: Promise<Snapshot> | null = null;

  constructor(deps: EstateDeps) {
    this.#d = deps;
    deps.changes?.onApproved((trx, record, change, request, decider) => this.#applyApproved(trx, record, change, request, decider));
  }

  get fileManaged(): boolean {
    return this.#d.file.path !== null;
  }

  /** At start: an estate.json replaces the overrides (recorded when it changed anything). */
  async start(): Promise<void> {
    const f = this.#d.file;
    if (f.problem !== null) this.#d.log.error({ file: f.path, problem: f.problem }, 'estate file refused: the overrides are left as they were');
    const settingsProblem = f.doc === null || this.#d.causeSettings === undefined ? null : checkSettingsProblem(f.doc, this.#d.causeSettings);
    if (settingsProblem !== null) {
      f.problem = `estate.json is not a valid overrides document: ${settingsProblem}`;
      this.#d.log.error({ file: f.path, problem: f.problem }, 'estate file refused: the overrides are left as they were');
    }
    if (f.doc !== null && settingsProblem === null) {
      const doc = f.doc;
      await this.#d.ledger.transact(async (trx, record) => {
        // Two hosts starting with the same file: the second finds the first's work and records nothing.
        await this.#d.repo.lock(trx);
        const before = await this.#d.repo.overrides(trx);
        const wanted: Record<string, OverrideEntry | null> = { ...doc.services };
        for (const o of before) if (!(o.name in wanted)) wanted[o.name] = null;
        await this.#write(trx, record, before, wanted, 'system', 'file', `estate overrides loaded from ${f.path}`);
      });
    }
    await this.#refresh(true);
  }

  // ---- the resolver -------------------------------------------------------------------------

  /** Before a push is placed: the index is current (a version read at most every FRESH_MS). */
  async ready(): Promise<void> {
    await this.#refresh(false);
  }

  resolve(signal: Signal): Placed {
    return this.place(signal);
  }

  /** Where an alert goes; call `ready()` first. */
  place(signal: Pick<Signal, 'name' | 'service' | 'labels' | 'context'>): Placement {
    if (this.#snap === null)
      return signal.service === null ? { service: null, rule: 'none', certain: false } : { service: signal.service, rule: 'alert_service', certain: false };
    return this.#snap.index.resolve(signal);
  }

  async #refresh(force: boolean): Promise<Snapshot> {
    const now = this.#d.clock.now().getTime();
    if (!force && this.#snap !== null && now - this.#checkedMs < FRESH_MS) return this.#snap;
    if (this.#loading !== null) return this.#loading;
    this.#loading = (async () => {
      try {
        const state = await this.#d.repo.state();
        this.#checkedMs = now;
        if (this.#snap !== null && this.#snap.version === state.version) return this.#snap;
        const [overrides, found, deps] = await Promise.all([this.#d.repo.overrides(), this.#d.repo.found(), this.#d.repo.dependencies()]);
        const { services, candidates } = assemble(overrides, found, deps);
        this.#snap = {
          version: state.version,
          built_at: state.built_at,
          overrides,
          services,
          candidates,
          byName: new Map(services.map((s) => [s.name, s])),
          index: new EstateIndex(state.version, services),
        };
        return this.#snap;
      } finally {
        this.#loading = null;
      }
    })();
    return this.#loading;
  }

  // ---- reading ------------------------------------------------------------------------------

  async estate(): Promise<EstateView> {
    const s = await this.#refresh(true);
    return {
      services: s.services,
      candidates: s.candidates,
      unplaced: await this.#d.unplaced.unplaced(UNPLACED_LISTED),
      built_at: s.built_at,
      version: s.version,
    };
  }

  async service(name: string): Promise<ServiceView> {
    const s = (await this.#refresh(true)).byName.get(name);
    if (s === undefined) throw new AppError('unknown_service', `the estate has no service ${name}`);
    return s;
  }

  /** The service, or null; at most FRESH_MS old (for readiness and the investigation). */
  async find(name: string): Promise<ServiceView | null> {
    return (await this.#refresh(false)).byName.get(name) ?? null;
  }

  /** Added services, the earliest added first: what counts toward the licence. */
  /** The names of the services people added (the estate "has" them), from the index kept current every few seconds. */
  async names(): Promise<string[]> {
    return [...(await this.#refresh(false)).byName.keys()];
  }

  async addedInOrder(): Promise<string[]> {
    return (await this.#refresh(true)).overrides.map((o) => o.name);
  }

  async overrides(): Promise<OverridesView> {
    const [rows, rev, open] = await Promise.all([this.#d.repo.overrides(), this.#d.revisions.get(REVISION), this.#d.changes?.list() ?? []]);
    const pending = open
      .map((r) => ({ service: r.change.service, request_id: r.id, fields: r.change.fields }))
      .sort((a, b) => a.service.localeCompare(b.service));
    const services: Record<string, OverrideEntry> = {};
    for (const r of [...rows].sort((a, b) => a.name.localeCompare(b.name))) services[r.name] = r.entry;
    return { services, ...rev, source: this.fileManaged ? 'file' : 'api', pending };
  }

  /** The overrides as stored, earliest added first (read in `trx` when given): what the keychain carries. */
  async overrideRows(trx?: Trx): Promise<OverrideRow[]> {
    return this.#d.repo.overrides(trx);
  }

  async suggestions(): Promise<SuggestionRow[]> {
    return this.#d.repo.suggestions('open');
  }

  // ---- changing -----------------------------------------------------------------------------

  /**
   * `PUT /v1/estate/overrides`: each service named is set whole (added when new), `null`
   * removes it; services not named are left as they are, so a PUT of what GET answered changes
   * nothing. All or nothing, in one transaction with its ledger event. A service whose change
   * lowers its tier or changes who approves it (tier 1 or 2) is not changed now: an approval
   * request for it is opened in the same transaction (`asked`, and `pending` in the view).
   */
  async putOverrides(body: unknown, who: Principal): Promise<OverridesView & { asked: string[] }> {
    if (this.fileManaged) throw new AppError('estate_file_managed', `the overrides are managed by ${this.#d.file.path}`);
    const { doc: raw, version } = takeBack(body, ['pending']);
    const doc = validateOverrides(raw);
    const settingsProblem = this.#d.causeSettings === undefined ? null : checkSettingsProblem(doc, this.#d.causeSettings);
    if (settingsProblem !== null) throw new AppError('invalid_body', settingsProblem);
    for (const [name, entry] of Object.entries(doc.services)) {
      for (const [i, email] of (entry?.approvers ?? []).entries()) {
        if (!(await this.#d.people.isPerson(email)))
          throw new AppError('invalid_body', `services.${name}.approvers.${i}: ${email} is not a person of this install`);
      }
    }
    const limit = await this.#d.licence.limit();
    const asked = await this.#d.ledger.transact(async (trx, record) => {
      await this.#d.repo.lock(trx);
      checkVersion(version, (await this.#d.revisions.get(REVISION, trx)).version, 'the estate overrides');
      const before = await this.#d.repo.overrides(trx);
      const was = new Map(before.map((o) => [o.name, o.entry]));
      // What lowers a tier, or changes who approves a tier-1 or tier-2 service, waits for two
      // approvals (estate-guard.ts); the rest of the PUT applies now.
      const now: Record<string, OverrideEntry | null> = {};
      const guarded: ProposedChange[] = [];
      for (const [name, entry] of Object.entries(doc.services)) {
        const old = was.get(name);
        if (old !== undefined && JSON.stringify(old) !== JSON.stringify(entry ?? null)) {
          const open = (await this.#d.changes?.pending(trx, name)) ?? null;
          if (open !== null)
            throw new AppError('estate_change_pending', `a change of ${name} waits for approval (request ${open.id}): approve or reject it first`);
        }
        const fields = old === undefined ? null : guardedFields(old, entry ?? null);
        if (fields === null) now[name] = entry ?? null;
        else guarded.push({ service: name, before: old!, after: entry ?? null, fields });
      }
      if (guarded.length > 0 && this.#d.changes === undefined)
        throw new AppError('estate_change_pending', 'this change needs two approvals, and nothing here can ask for them');
      const names = new Set(before.map((o) => o.name));
      const countBefore = names.size;
      for (const [n, e] of Object.entries(now))
        if (e === null) names.delete(n);
        else names.add(n);
      if (limit.services !== null && names.size > limit.services && names.size > countBefore) {
        throw new AppError('licence_limit', `the ${tierName(limit.tier)} licence allows ${limit.services} services; this change would make ${names.size}`);
      }
      await this.#write(trx, record, before, now, who.actor, 'api', 'estate overrides changed');
      const ids: string[] = [];
      for (const change of guarded)
        ids.push(
          (await this.#d.changes!.open(trx, record, { change, summary: describeChange(change), asker: { actor: who.actor, by: who.email ?? who.actor } })).id,
        );
      return ids;
    });
    await this.#refresh(true);
    return { ...(await this.overrides()), asked };
  }

  /**
   * An approved change (the second approval's transaction): applied only onto the entry it was
   * asked for, which no other change can have touched meanwhile (a PUT naming the service answers
   * 409 `estate_change_pending` while it waits); estate.json taking over is refused.
   */
  async #applyApproved(trx: Trx, record: RecordEvent, change: ProposedChange, request: { id: string; requested_by: string }, decider: string): Promise<void> {
    if (this.fileManaged) throw new AppError('estate_file_managed', `the overrides are managed by ${this.#d.file.path}: the change cannot be applied`);
    await this.#d.repo.lock(trx);
    const before = await this.#d.repo.overrides(trx);
    const current = before.find((o) => o.name === change.service)?.entry ?? null;
    if (JSON.stringify(current) !== JSON.stringify(change.before))
      throw new AppError('estate_change_stale', `${change.service} is no longer what this change was asked for on: reject it and ask again`);
    await this.#write(trx, record, before, { [change.service]: change.after }, decider, 'api', `estate change approved: ${describeChange(change)}`, {
      request_id: request.id,
      by: request.requested_by,
    });
  }

  /**
   * The keychain's apply (estate.carried.ts): in the caller's transaction, the overrides become
   * what `build` makes of the stored ones (each named service set whole, null removes it), under
   * the checks of a PUT: the document's schema, check settings against the loaded packs,
   * approvers who are people of this install, the licence's services. 409 `estate_file_managed`
   * when estate.json manages them here. Answers what changed.
   */
  async replaceCarried(
    trx: Trx,
    record: RecordEvent,
    build: (before: OverrideRow[]) => Record<string, OverrideEntry | null>,
    actor: string,
    reason: string,
  ): Promise<{ added: string[]; changed: string[]; removed: string[] }> {
    if (this.fileManaged) throw new AppError('estate_file_managed', `the overrides are managed by ${this.#d.file.path} on this install`);
    await this.#d.repo.lock(trx);
    const before = await this.#d.repo.overrides(trx);
    const doc = validateOverrides({ services: build(before) });
    const settingsProblem = this.#d.causeSettings === undefined ? null : checkSettingsProblem(doc, this.#d.causeSettings);
    if (settingsProblem !== null) throw new AppError('invalid_body', settingsProblem);
    for (const [name, entry] of Object.entries(doc.services)) {
      for (const [i, email] of (entry?.approvers ?? []).entries()) {
        if (!(await this.#d.people.isPerson(email, trx)))
          throw new AppError('invalid_body', `services.${name}.approvers.${i}: ${email} is not a person of this install`);
      }
    }
    const names = new Set(before.map((o) => o.name));
    for (const [n, e] of Object.entries(doc.services))
      if (e === null) names.delete(n);
      else names.add(n);
    const limit = await this.#d.licence.limit(trx);
    if (limit.services !== null && names.size > limit.services && names.size > before.length) {
      throw new AppError('licence_limit', `the ${tierName(limit.tier)} licence allows ${limit.services} services; this change would make ${names.size}`);
    }
    const was = new Map(before.map((o) => [o.name, o.entry]));
    const out = { added: [] as string[], changed: [] as string[], removed: [] as string[] };
    for (const [n, e] of Object.entries(doc.services)) {
      if (e === null) {
        if (was.has(n)) out.removed.push(n);
      } else if (!was.has(n)) out.added.push(n);
      else if (JSON.stringify(was.get(n)) !== JSON.stringify(e)) out.changed.push(n);
    }
    await this.#write(trx, record, before, doc.services, actor, 'keychain', reason);
    return out;
  }

  async #write(
    trx: Trx,
    record: RecordEvent,
    before: OverrideRow[],
    wanted: Record<string, OverrideEntry | null>,
    actor: string,
    via: 'api' | 'file' | 'keychain',
    reason: string,
    /** An approved change: its request and who asked for it. */
    approved?: { request_id: string; by: string },
  ): Promise<void> {
    const at = this.#d.clock.now().toISOString();
    const was = new Map(before.map((o) => [o.name, o]));
    let seq = before.reduce((m, o) => Math.max(m, o.added_seq), 0);
    const diff: { added: Record<string, OverrideEntry>; removed: string[]; changed: Record<string, Record<string, { from: unknown; to: unknown }>> } = {
      added: {},
      removed: [],
      changed: {},
    };
    for (const name of Object.keys(wanted).sort()) {
      const entry = wanted[name] ?? null;
      const old = was.get(name);
      if (entry === null) {
        if (old === undefined) continue;
        await this.#d.repo.removeOverride(trx, name);
        diff.removed.push(name);
        continue;
      }
      if (old === undefined) {
        await this.#d.repo.putOverride(trx, { name, entry, added_by: actor, added_at: at, added_seq: ++seq, updated_at: at });
        diff.added[name] = entry;
        continue;
      }
      const fields: Record<string, { from: unknown; to: unknown }> = {};
      for (const k of new Set([...Object.keys(old.entry), ...Object.keys(entry)]) as Set<keyof OverrideEntry>) {
        if (JSON.stringify(old.entry[k] ?? null) !== JSON.stringify(entry[k] ?? null)) fields[k] = { from: old.entry[k] ?? null, to: entry[k] ?? null };
      }
      if (Object.keys(fields).length === 0) continue;
      await this.#d.repo.putOverride(trx, { ...old, entry, updated_at: at });
      diff.changed[name] = fields;
    }
    if (Object.keys(diff.added).length + diff.removed.length + Object.keys(diff.changed).length === 0) return;
    const rev = await this.#d.revisions.bump(trx, REVISION, actor, at);
    await this.#d.repo.bump(trx);
    const parts = splitDiff(diff);
    await record(
      parts.map((part, i) => ({
        type: 'estate.overrides_changed',
        actor,
        reason: parts.length === 1 ? reason : `${reason} (part ${i + 1} of ${parts.length})`,
        data: { via, version: rev.version, ...(approved ?? {}), ...(parts.length === 1 ? {} : { part: i + 1, parts: parts.length }), diff: part },
      })),
    );
  }

  /** Confirms (a dependency with origin `confirmed`) or dismisses (for good) a suggestion; 404 for an unknown id. */
  async decide(id: string, how: 'confirm' | 'dismiss', who: Principal): Promise<SuggestionRow> {
    const at = this.#d.clock.now().toISOString();
    const out = await this.#d.ledger.transact(async (trx, record) => {
      await this.#d.repo.lock(trx);
      const s = await this.#d.repo.suggestion(trx, id);
      if (s === null) throw new AppError('not_found', `no suggestion ${id}`);
      const state = how === 'confirm' ? 'confirmed' : 'dismissed';
      if (s.state === state) return s;
      if (s.state !== 'open') throw new AppError('suggestion_decided', `suggestion ${id} is already ${s.state}`);
      await this.#d.repo.decide(trx, id, state, who.actor, at);
      if (how === 'confirm')
        await this.#d.repo.addDependency(trx, { service: s.service, depends_on: s.depends_on, origin: 'confirmed', suggestion_id: id, by: who.actor, at });
      await this.#d.repo.bump(trx);
      await record({
        type: how === 'confirm' ? 'estate.suggestion_confirmed' : 'estate.suggestion_dismissed',
        actor: who.actor,
        reason: `${s.service} depends on ${s.depends_on}: ${state}`,
        data: { id, service: s.service, depends_on: s.depends_on, score: s.score },
      });
      return { ...s, state, decided_by: who.actor, updated_at: at } as SuggestionRow;
    });
    await this.#refresh(true);
    return out;
  }

  /** Called by a build after it wrote its findings: this process sees them at once. */
  async changed(): Promise<void> {
    await this.#refresh(true);
  }
}

/** One line for people: what the change does (the request's summary, the event's reason). */
function describeChange(c: ProposedChange): string {
  const parts: string[] = [];
  if (c.fields.removed === true) parts.push(`remove ${c.service} (tier ${c.before.tier ?? 'none'})`);
  else if (c.fields.tier !== undefined) parts.push(`lower ${c.service} from tier ${c.fields.tier.from ?? 'none'} to ${c.fields.tier.to ?? 'none'}`);
  if (c.fields.approvers !== undefined)
    parts.push(`change who approves ${c.service} from ${c.fields.approvers.from.join(', ') || 'nobody'} to ${c.fields.approvers.to.join(', ') || 'nobody'}`);
  return parts.join('; ');
}

type Diff = { added: Record<string, unknown>; removed: string[]; changed: Record<string, unknown> };
/** What one ledger event's diff may hold (the ledger takes at most 64 KiB of data). */
const PART_BYTES = 48 * 1024;

/**
 * The diff in parts that each fit one ledger event, every service's change whole in one part, all
 * recorded in the change's transaction. A single entry too large for an event (hundreds of long
 * links) is recorded by its sha256 and size instead, so the chain still says exactly what it was.
 */
function splitDiff(diff: Diff): Diff[] {
  const items: Array<[keyof Diff, string, unknown]> = [
    ...Object.entries(diff.added).map(([k, v]) => ['added', k, v] as [keyof Diff, string, unknown]),
    ...Object.entries(diff.changed).map(([k, v]) => ['changed', k, v] as [keyof Diff, string, unknown]),
    ...diff.removed.map((k) => ['removed', k, null] as [keyof Diff, string, unknown]),
  ];
  const parts: Diff[] = [];
  let part: Diff = { added: {}, removed: [], changed: {} };
  let size = 0;
  for (const [kind, name, value] of items) {
    let v = value;
    let bytes = Buffer.byteLength(JSON.stringify(v ?? name)) + name.length + 8;
    if (bytes > PART_BYTES) {
      const text = JSON.stringify(v);
      v = { too_large_to_list: true, bytes: Buffer.byteLength(text), sha256: createHash('sha256').update(text).digest('hex') };
      bytes = 200;
    }
    if (size + bytes > PART_BYTES && size > 0) {
      parts.push(part);
      part = { added: {}, removed: [], changed: {} };
      size = 0;
    }
    if (kind === 'removed') part.removed.push(name);
    else part[kind][name] = v;
    size += bytes;
  }
  parts.push(part);
  return parts;
}
