import type { Db, Trx } from '../storage/db.ts';
import type { Link, OverrideEntry } from './estate.schema.ts';

/** A service as a person added it: the entry of the overrides document. */
export interface OverrideRow {
  name: string;
  entry: OverrideEntry;
  added_by: string;
  added_at: string;
  /** Order of adding (the licence counts the earliest first). */
  added_seq: number;
  updated_at: string;
}

/** What a build found for one name: links of known origin, an owner or team it read. */
export interface FoundDoc {
  owner: string | null;
  team: string | null;
  technologies: string[];
  links: Link[];
  /** Where the name was found: connector and how (`manifest`, `label`, `alert`, `deploy`...). */
  sources: Array<{ connector: string | null; how: string }>;
}

export interface DependencyRow {
  service: string;
  depends_on: string;
  origin: 'confirmed';
  suggestion_id: string | null;
  by: string;
  at: string;
}

export type SuggestionState = 'open' | 'confirmed' | 'dismissed';
export interface SuggestionRow {
  id: string;
  service: string;
  depends_on: string;
  evidence: Array<Record<string, unknown>>;
  score: number;
  state: SuggestionState;
  updated_at: string;
  decided_by: string | null;
}

export interface EstateState {
  version: number;
  built_at: string | null;
  build_job: string | null;
}

/** The only code that touches the estate's tables. */
export class EstateRepo {
  readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  async state(trx?: Trx): Promise<EstateState> {
    const r = (await (trx ?? this.db)('estate_state').where({ id: 1 }).first()) as Record<string, unknown>;
    return { version: Number(r.version), built_at: (r.built_at as string | null) ?? null, build_job: (r.build_job as string | null) ?? null };
  }

  /** Takes the estate's row lock (MySQL; SQLite has one writer): changes to the estate queue here. */
  async lock(trx: Trx): Promise<EstateState> {
    const r = (await trx('estate_state').where({ id: 1 }).forUpdate().first()) as Record<string, unknown>;
    return { version: Number(r.version), built_at: (r.built_at as string | null) ?? null, build_job: (r.build_job as string | null) ?? null };
  }

  /** A new version: every host process rebuilds its resolver index when it sees it. */
  async bump(trx: Trx, built?: { at: string; job: string | null }): Promise<number> {
    const now = await this.lock(trx);
    await trx('estate_state')
      .where({ id: 1 })
      .update({ version: now.version + 1, ...(built === undefined ? {} : { built_at: built.at, build_job: built.job }) });
    return now.version + 1;
  }

  async overrides(trx?: Trx): Promise<OverrideRow[]> {
    const rows = (await (trx ?? this.db)('estate_overrides').select().orderBy('added_seq')) as Array<Record<string, unknown>>;
    return rows.map((r) => ({
      name: String(r.name),
      entry: JSON.parse(String(r.doc)) as OverrideEntry,
      added_by: String(r.added_by),
      added_at: String(r.added_at),
      added_seq: Number(r.added_seq),
      updated_at: String(r.updated_at),
    }));
  }

  async putOverride(trx: Trx, row: OverrideRow): Promise<void> {
    await trx('estate_overrides')
      .insert({
        name: row.name,
        doc: JSON.stringify(row.entry),
        added_by: row.added_by,
        added_at: row.added_at,
        added_seq: row.added_seq,
        updated_at: row.updated_at,
      })
      .onConflict('name')
      .merge(['doc', 'updated_at']);
  }

  async removeOverride(trx: Trx, name: string): Promise<void> {
    await trx('estate_overrides').where({ name }).delete();
  }

  async found(trx?: Trx): Promise<Map<string, FoundDoc>> {
    const rows = (await (trx ?? this.db)('estate_found').select()) as Array<{ name: string; doc: string }>;
    return new Map(rows.map((r) => [r.name, JSON.parse(r.doc) as FoundDoc]));
  }

  async replaceFound(trx: Trx, found: Map<string, FoundDoc>): Promise<void> {
    await trx('estate_found').delete();
    const rows = [...found].map(([name, doc]) => ({ name, doc: JSON.stringify(doc) }));
    for (let i = 0; i < rows.length; i += 200) await trx('estate_found').insert(rows.slice(i, i + 200));
  }

  async dependencies(trx?: Trx): Promise<DependencyRow[]> {
    return (await (trx ?? this.db)('estate_dependencies').select().orderBy(['service', 'depends_on'])) as DependencyRow[];
  }

  async addDependency(trx: Trx, d: DependencyRow): Promise<void> {
    await trx('estate_dependencies').insert(d).onConflict(['service', 'depends_on']).ignore();
  }

  async suggestions(state?: SuggestionState, trx?: Trx): Promise<SuggestionRow[]> {
    const q = (trx ?? this.db)('estate_suggestions')
      .select()
      .orderBy([{ column: 'score', order: 'desc' }, { column: 'id' }]);
    if (state !== undefined) void q.where({ state });
    return ((await q) as Array<Record<string, unknown>>).map(suggestionFromRaw);
  }

  async suggestion(trx: Trx, id: string): Promise<SuggestionRow | null> {
    const r = (await trx('estate_suggestions').where({ id }).forUpdate().first()) as Record<string, unknown> | undefined;
    return r === undefined ? null : suggestionFromRaw(r);
  }

  /**
   * What a build suggests: new ones are added open; open ones get the new evidence and score;
   * confirmed and dismissed ones are left as they are (a dismissal is for good); open ones the
   * build no longer suggests are removed.
   */
  async putSuggestions(trx: Trx, list: Array<Omit<SuggestionRow, 'state' | 'decided_by'>>): Promise<void> {
    const existing = new Map((await this.suggestions(undefined, trx)).map((s) => [s.id, s]));
    const keep = new Set(list.map((s) => s.id));
    const stale = [...existing.values()].filter((s) => s.state === 'open' && !keep.has(s.id)).map((s) => s.id);
    if (stale.length > 0) await trx('estate_suggestions').whereIn('id', stale).delete();
    for (const s of list) {
      const was = existing.get(s.id);
      if (was === undefined) await trx('estate_suggestions').insert({ ...s, evidence: JSON.stringify(s.evidence), state: 'open', decided_by: null });
      else if (was.state === 'open')
        await trx('estate_suggestions')
          .where({ id: s.id })
          .update({ evidence: JSON.stringify(s.evidence), score: s.score, updated_at: s.updated_at });
    }
  }

  async decide(trx: Trx, id: string, state: 'confirmed' | 'dismissed', by: string, at: string): Promise<void> {
    await trx('estate_suggestions').where({ id }).update({ state, decided_by: by, updated_at: at });
  }
}

function suggestionFromRaw(r: Record<string, unknown>): SuggestionRow {
  return {
    id: String(r.id),
    service: String(r.service),
    depends_on: String(r.depends_on),
    evidence: JSON.parse(String(r.evidence)) as SuggestionRow['evidence'],
    score: Number(r.score),
    state: r.state as SuggestionState,
    updated_at: String(r.updated_at),
    decided_by: (r.decided_by as string | null) ?? null,
  };
}
