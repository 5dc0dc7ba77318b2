import { dialect, type Db, type Trx } from '../storage/db.ts';
import { withStatements } from '../storage/sqlite-statements.ts';
import type { AlertContext } from '../plugins/contract.ts';
import type { Signal } from './normalise.ts';

export type HeldStatus = 'firing' | 'resolved' | 'released';

export interface HeldAlert {
  fingerprint: string;
  source: string;
  name: string;
  severity: Signal['severity'];
  status: HeldStatus;
  service: string | null;
  labels: Record<string, string>;
  summary: string;
  first_seen: string;
  last_seen: string;
  ended_at: string | null;
  /** When the current firing began (a re-send does not move it): the debounce counts from here. */
  fired_at: string | null;
  /** The episode the alert belongs to while it fires; NULL until grouped, and again after a new firing. */
  episode_id: string | null;
  /** What the tool said beyond the labels (when the condition began, the rule's expression), or null. */
  context: AlertContext | null;
}

/** Firing alerts of one service that no episode has taken yet. */
export interface UngroupedService {
  service: string | null;
  count: number;
  first_fired: string;
}

/** `seen_hour` is `last_seen` cut to the hour: what the release's index reads (see its migration). */
type Row = Omit<HeldAlert, 'labels' | 'context'> & { labels: string; context: string | null; seen_hour: string };
const fromRow = ({ seen_hour: _hour, ...r }: Row): HeldAlert => ({
  ...r,
  labels: JSON.parse(r.labels) as Record<string, string>,
  context: r.context === null || r.context === undefined ? null : (JSON.parse(r.context) as AlertContext),
});
const toRow = (a: HeldAlert): Row => ({
  ...a,
  labels: JSON.stringify(a.labels),
  context: a.context === null ? null : JSON.stringify(a.context),
  seen_hour: hourOf(a.last_seen),
});
const hourOf = (iso: string): string => iso.slice(0, 13);
/** Rows per multi-row upsert: 15 columns each stays far below both engines' parameter limits. */
const UPSERT_CHUNK = 200;
/** Fingerprints per `IN (…)` on MySQL (SQLite takes them one by one): a group commit's alerts in one or two statements. */
const IN_CHUNK = 2000;
const COLUMNS = [
  'fingerprint',
  'source',
  'name',
  'severity',
  'status',
  'service',
  'labels',
  'summary',
  'first_seen',
  'last_seen',
  'ended_at',
  'fired_at',
  'episode_id',
  'seen_hour',
  'context',
] as const;
/** SQLite runs the hot path one row at a time on cached statements: no per-call SQL to build or prepare. */
const SQLITE = {
  one: `select ${COLUMNS.join(', ')} from held_alerts where fingerprint = ?`,
  touch: 'update held_alerts set last_seen = ?, seen_hour = ? where fingerprint = ?',
  upsert: `insert into held_alerts (${COLUMNS.join(', ')}) values (${COLUMNS.map(() => '?').join(', ')}) on conflict (fingerprint) do update set ${COLUMNS.slice(
    1,
  )
    .map((c) => `${c} = excluded.${c}`)
    .join(', ')}`,
};

/** True when `after` differs from `before` in `last_seen` alone (what a plain re-send changes). */
export function onlyLastSeenMoved(before: HeldAlert, after: HeldAlert): boolean {
  for (const c of COLUMNS) {
    if (c === 'last_seen' || c === 'seen_hour' || c === 'labels' || c === 'context') continue;
    if (before[c] !== after[c]) return false;
  }
  return (
    (before.labels === after.labels || JSON.stringify(before.labels) === JSON.stringify(after.labels)) &&
    (before.context === after.context || JSON.stringify(before.context) === JSON.stringify(after.context))
  );
}

/** The only code that touches `held_alerts`. */
export class HeldRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** The rows for these fingerprints, locked on MySQL for the rest of `trx`. */
  async lockMany(trx: Trx, fingerprints: string[]): Promise<Map<string, HeldAlert>> {
    const out = new Map<string, HeldAlert>();
    if (dialect(this.#db) === 'sqlite') {
      await withStatements(trx, ({ sql }) => {
        const one = sql(SQLITE.one);
        for (const f of fingerprints) {
          const r = one.get(f) as Row | undefined;
          if (r !== undefined) out.set(r.fingerprint, fromRow(r));
        }
      });
      return out;
    }
    for (let i = 0; i < fingerprints.length; i += IN_CHUNK) {
      const q = trx('held_alerts').whereIn('fingerprint', fingerprints.slice(i, i + IN_CHUNK));
      const rows = (await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q)) as Row[];
      for (const r of rows) out.set(r.fingerprint, fromRow(r));
    }
    return out;
  }

  /** Writes these rows whole, new or not, in as few statements as the engine allows. */
  async upsert(trx: Trx, alerts: HeldAlert[]): Promise<void> {
    if (dialect(this.#db) === 'sqlite') {
      await withStatements(trx, ({ sql }) => {
        const upsert = sql(SQLITE.upsert);
        for (const a of alerts) {
          const r = toRow(a);
          upsert.run(...COLUMNS.map((c) => r[c]));
        }
      });
      return;
    }
    for (let i = 0; i < alerts.length; i += UPSERT_CHUNK) {
      await trx('held_alerts')
        .insert(alerts.slice(i, i + UPSERT_CHUNK).map(toRow))
        .onConflict('fingerprint')
        .merge();
    }
  }

  /**
   * Moves `last_seen` of these fingerprints to `at`: a re-send that changed nothing else. Far
   * cheaper than writing the rows whole (on MySQL one `UPDATE … IN` instead of an upsert of
   * every column).
   */
  async touch(trx: Trx, fingerprints: string[], at: string): Promise<void> {
    if (dialect(this.#db) === 'sqlite') {
      await withStatements(trx, ({ sql }) => {
        const touch = sql(SQLITE.touch);
        for (const f of fingerprints) touch.run(at, hourOf(at), f);
      });
      return;
    }
    for (let i = 0; i < fingerprints.length; i += IN_CHUNK) {
      await trx('held_alerts')
        .whereIn('fingerprint', fingerprints.slice(i, i + IN_CHUNK))
        .update({ last_seen: at, seen_hour: hourOf(at) });
    }
  }

  async update(trx: Trx, a: HeldAlert): Promise<void> {
    const { fingerprint, ...rest } = toRow(a);
    await trx('held_alerts').where({ fingerprint }).update(rest);
  }

  /** Firing alerts last seen before `cutoff`, locked on MySQL. */
  async staleFiring(trx: Trx, cutoff: string, limit: number): Promise<HeldAlert[]> {
    // The hour bound lets the (status, seen_hour) index find the candidates; last_seen decides.
    const q = trx('held_alerts')
      .where({ status: 'firing' })
      .andWhere('seen_hour', '<=', hourOf(cutoff))
      .andWhere('last_seen', '<', cutoff)
      .orderBy('last_seen')
      .limit(limit);
    return ((await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q)) as Row[]).map(fromRow);
  }

  /** How many alerts are firing (the held set's size; GET /metrics). */
  async firingCount(): Promise<number> {
    const row = (await this.#db('held_alerts').count({ n: '*' }).where({ status: 'firing' }).first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }

  /** Services with firing alerts that belong to no episode yet, with the oldest firing. */
  async ungroupedByService(): Promise<UngroupedService[]> {
    const rows = (await this.#db('held_alerts')
      .select('service')
      .count({ count: '*' })
      .min({ first_fired: 'fired_at' })
      .whereNull('episode_id')
      .andWhere({ status: 'firing' })
      .groupBy('service')) as { service: string | null; count: number | string; first_fired: string | null }[];
    return rows.map((r) => ({ service: r.service, count: Number(r.count), first_fired: r.first_fired ?? '' }));
  }

  /**
   * Alerts no service was found for (the estate lists them so a person can link them): by
   * source and name, the most frequent first, with when one was last seen.
   */
  async unplaced(limit: number): Promise<Array<{ source: string; name: string; count: number; last_seen: string }>> {
    const rows = (await this.#db('held_alerts')
      .select('source', 'name')
      .count({ count: '*' })
      .max({ last_seen: 'last_seen' })
      .whereNull('service')
      .groupBy('source', 'name')
      .orderBy([{ column: 'count', order: 'desc' }, { column: 'last_seen', order: 'desc' }, { column: 'name' }])
      .limit(limit)) as { source: string; name: string; count: number | string; last_seen: string }[];
    return rows.map((r) => ({ source: r.source, name: r.name, count: Number(r.count), last_seen: r.last_seen }));
  }

  /** The services alerts were placed under, with how many alerts each (the estate's build reads them). */
  async servicesNamed(): Promise<Array<{ service: string; count: number }>> {
    const rows = (await this.#db('held_alerts').select('service').count({ count: '*' }).whereNotNull('service').groupBy('service')) as {
      service: string;
      count: number | string;
    }[];
    return rows.map((r) => ({ service: r.service, count: Number(r.count) }));
  }

  /** Up to `limit` firing alerts of `service` in no episode, oldest first; locked on MySQL. */
  async ungroupedOf(trx: Trx, service: string | null, limit: number): Promise<HeldAlert[]> {
    const q = trx('held_alerts').whereNull('episode_id').andWhere({ status: 'firing' });
    if (service === null) q.whereNull('service');
    else q.andWhere({ service });
    q.orderBy('fired_at').limit(limit);
    return ((await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q)) as Row[]).map(fromRow);
  }

  /**
   * Up to `limit` firing alerts from `source` in no episode that fired at or before `firedBefore`,
   * oldest first, leaving out the services in `except` (and alerts under no service when
   * `exceptUnplaced`); locked on MySQL. A storm sweeps these (host/episodes/storm.ts).
   */
  async ungroupedFrom(trx: Trx, source: string, firedBefore: string, except: string[], exceptUnplaced: boolean, limit: number): Promise<HeldAlert[]> {
    const q = trx('held_alerts').whereNull('episode_id').andWhere({ status: 'firing', source }).andWhere('fired_at', '<=', firedBefore);
    if (except.length > 0) q.andWhere((w) => w.whereNull('service').orWhereNotIn('service', except));
    if (exceptUnplaced) q.whereNotNull('service');
    q.orderBy('fired_at').limit(limit);
    return ((await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q)) as Row[]).map(fromRow);
  }

  async setEpisode(trx: Trx, fingerprints: string[], episodeId: string): Promise<void> {
    for (let i = 0; i < fingerprints.length; i += 500) {
      await trx('held_alerts')
        .whereIn('fingerprint', fingerprints.slice(i, i + 500))
        .update({ episode_id: episodeId });
    }
  }

  async list(status?: HeldStatus): Promise<HeldAlert[]> {
    const q = this.#db('held_alerts').orderBy('last_seen', 'desc');
    if (status !== undefined) q.where({ status });
    return ((await q) as Row[]).map(fromRow);
  }

  /** Every service an alert has named, the first seen first (ties by name): licence limits count these. */
  async servicesByFirstSeen(): Promise<string[]> {
    const rows = (await this.#db('held_alerts')
      .select('service')
      .min({ first: 'first_seen' })
      .whereNotNull('service')
      .groupBy('service')
      .orderBy([{ column: 'first' }, { column: 'service' }])) as { service: string }[];
    return rows.map((r) => r.service);
  }

  /** Every service an alert has named, sorted (governance: the services one may set autonomy for). */
  async knownServices(): Promise<string[]> {
    const rows = (await this.#db('held_alerts').distinct('service').whereNotNull('service').orderBy('service')) as { service: string }[];
    return rows.map((r) => r.service);
  }
}
