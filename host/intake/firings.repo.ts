import { DAY, HOUR } from '../clock.ts';
import { dialect, type Db, type Trx } from '../storage/db.ts';
import { withStatements } from '../storage/sqlite-statements.ts';

/** How many times an alert must have started firing within FLAP_WINDOW to count as flapping. */
export const FLAP_MIN = 3;
export const FLAP_WINDOW = HOUR;
/** The history is kept this long: the longest window the baseline counts. */
export const HISTORY = 30 * DAY;

/** An alert name as the digest lists it: how often it started firing in the window. */
export interface NoisyAlert {
  source: string;
  name: string;
  /** The service it was placed under; null: unplaced. */
  service: string | null;
  /** How many times it started firing. */
  firings: number;
  /** How many distinct alerts (fingerprints) of that name fired. */
  alerts: number;
  last_fired: string;
}

/** The only code that touches `alert_firings`: one row each time an alert starts firing. */
export class FiringsRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async record(trx: Trx, fingerprints: string[], firedMs: number): Promise<void> {
    if (dialect(this.#db) === 'sqlite') {
      await withStatements(trx, ({ sql }) => {
        const insert = sql('insert into alert_firings (fingerprint, fired_ms) values (?, ?)');
        for (const f of fingerprints) insert.run(f, firedMs);
      });
      return;
    }
    for (let i = 0; i < fingerprints.length; i += 500) {
      await trx('alert_firings').insert(fingerprints.slice(i, i + 500).map((fingerprint) => ({ fingerprint, fired_ms: firedMs })));
    }
  }

  /** Firings in the last 7 and 30 days and the last hour, by fingerprint (absent: none). */
  async counts(trx: Trx, fingerprints: string[], nowMs: number): Promise<Map<string, { d7: number; d30: number; flap: number }>> {
    const out = new Map<string, { d7: number; d30: number; flap: number }>();
    for (let i = 0; i < fingerprints.length; i += 500) {
      const rows = (await trx('alert_firings')
        .select('fingerprint')
        .select(trx.raw('sum(case when fired_ms >= ? then 1 else 0 end) as d7', [nowMs - 7 * DAY]))
        .select(trx.raw('count(*) as d30'))
        .select(trx.raw('sum(case when fired_ms >= ? then 1 else 0 end) as flap', [nowMs - FLAP_WINDOW]))
        .whereIn('fingerprint', fingerprints.slice(i, i + 500))
        .andWhere('fired_ms', '>=', nowMs - HISTORY)
        .groupBy('fingerprint')) as { fingerprint: string; d7: number | string; d30: number | string; flap: number | string }[];
      for (const r of rows) out.set(r.fingerprint, { d7: Number(r.d7), d30: Number(r.d30), flap: Number(r.flap) });
    }
    return out;
  }

  /**
   * The alerts that started firing most often in [fromMs, toMs) (the `fired_ms` index), by
   * source, name and service, with the alert's name and service from `held_alerts` (the same
   * area's table); `unplaced` keeps only alerts placed under no service. Firings older than
   * HISTORY are pruned, so a longer window counts only the last 30 days.
   */
  async noisiest(fromMs: number, toMs: number, limit: number, unplaced = false): Promise<NoisyAlert[]> {
    const q = this.#db('alert_firings as f')
      .join('held_alerts as h', 'h.fingerprint', 'f.fingerprint')
      .select('h.source', 'h.name', 'h.service')
      .count({ firings: '*' })
      .countDistinct({ alerts: 'f.fingerprint' })
      .max({ last_ms: 'f.fired_ms' })
      .where('f.fired_ms', '>=', fromMs)
      .andWhere('f.fired_ms', '<', toMs)
      .groupBy('h.source', 'h.name', 'h.service')
      .orderBy([{ column: 'firings', order: 'desc' }, { column: 'last_ms', order: 'desc' }, { column: 'h.name' }])
      .limit(limit);
    if (unplaced) q.whereNull('h.service');
    const rows = (await q) as Array<{
      source: string;
      name: string;
      service: string | null;
      firings: number | string;
      alerts: number | string;
      last_ms: number | string;
    }>;
    return rows.map((r) => ({
      source: r.source,
      name: r.name,
      service: r.service,
      firings: Number(r.firings),
      alerts: Number(r.alerts),
      last_fired: new Date(Number(r.last_ms)).toISOString(),
    }));
  }

  /** Forgets firings older than the history the baseline reads; returns how many went. */
  async prune(nowMs: number): Promise<number> {
    const ids = (await this.#db('alert_firings')
      .select('id')
      .where('fired_ms', '<', nowMs - HISTORY)
      .limit(5000)) as { id: number }[];
    if (ids.length === 0) return 0;
    return this.#db('alert_firings')
      .whereIn(
        'id',
        ids.map((r) => r.id),
      )
      .delete();
  }
}
