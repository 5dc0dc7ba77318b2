import { dialect, type Db, type Trx } from '../storage/db.ts';
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
}

type Row = Omit<HeldAlert, 'labels'> & { labels: string };
const fromRow = (r: Row): HeldAlert => ({ ...r, labels: JSON.parse(r.labels) as Record<string, string> });

/** The only code that touches `held_alerts`. */
export class HeldRepo {
  readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  /** The rows for these fingerprints, locked on MySQL for the rest of `trx`. */
  async lockMany(trx: Trx, fingerprints: string[]): Promise<Map<string, HeldAlert>> {
    const out = new Map<string, HeldAlert>();
    for (let i = 0; i < fingerprints.length; i += 500) {
      const q = trx('held_alerts').whereIn('fingerprint', fingerprints.slice(i, i + 500));
      const rows = (await (dialect(this.db) === 'mysql' ? q.forUpdate() : q)) as Row[];
      for (const r of rows) out.set(r.fingerprint, fromRow(r));
    }
    return out;
  }

  async insert(trx: Trx, a: HeldAlert): Promise<void> {
    await trx('held_alerts').insert({ ...a, labels: JSON.stringify(a.labels) });
  }

  async update(trx: Trx, a: HeldAlert): Promise<void> {
    const { fingerprint, ...rest } = a;
    await trx('held_alerts').where({ fingerprint }).update({ ...rest, labels: JSON.stringify(a.labels) });
  }

  /** Firing alerts last seen before `cutoff`, locked on MySQL. */
  async staleFiring(trx: Trx, cutoff: string, limit: number): Promise<HeldAlert[]> {
    const q = trx('held_alerts').where({ status: 'firing' }).andWhere('last_seen', '<', cutoff).orderBy('last_seen').limit(limit);
    return ((await (dialect(this.db) === 'mysql' ? q.forUpdate() : q)) as Row[]).map(fromRow);
  }

  async list(status?: HeldStatus): Promise<HeldAlert[]> {
    const q = this.db('held_alerts').orderBy('last_seen', 'desc');
    if (status !== undefined) q.where({ status });
    return ((await q) as Row[]).map(fromRow);
  }
}
