import type { Db, Trx } from '../storage/db.ts';

/** How much a storm episode holds: alerts and services, and the services holding most. */
export interface StormCounts {
  alerts: number;
  services: number;
}

/** The only code that touches `storm_services`: which services a storm episode holds, and how many alerts of each. */
export class StormRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** The open storm holding alerts of `service`, if any (its id). */
  async holding(trx: Trx, service: string): Promise<string | null> {
    const row = (await trx('storm_services')
      .join('episodes', 'episodes.id', 'storm_services.episode_id')
      .select('storm_services.episode_id as id')
      .where('storm_services.service', service)
      .andWhere('episodes.state', 'open')
      .first()) as { id: string } | undefined;
    return row?.id ?? null;
  }

  /** Adds `counts` (alerts per service) to the storm. */
  async add(trx: Trx, episodeId: string, counts: Map<string, number>, at: string): Promise<void> {
    if (counts.size === 0) return;
    const services = [...counts.keys()];
    const known = new Map<string, number>();
    for (let i = 0; i < services.length; i += 500) {
      const rows = (await trx('storm_services')
        .select('service', 'alerts')
        .where({ episode_id: episodeId })
        .whereIn('service', services.slice(i, i + 500))) as Array<{ service: string; alerts: number | string }>;
      for (const r of rows) known.set(r.service, Number(r.alerts));
    }
    const fresh = services.filter((s) => !known.has(s)).map((service) => ({ episode_id: episodeId, service, alerts: counts.get(service)!, joined_at: at }));
    for (let i = 0; i < fresh.length; i += 200) await trx('storm_services').insert(fresh.slice(i, i + 200));
    for (const [service, n] of known)
      await trx('storm_services')
        .where({ episode_id: episodeId, service })
        .update({ alerts: n + counts.get(service)! });
  }

  /** Each storm's counts. */
  async counts(ids: string[]): Promise<Map<string, StormCounts>> {
    if (ids.length === 0) return new Map();
    const rows = (await this.#db('storm_services')
      .select('episode_id')
      .count({ services: '*' })
      .sum({ alerts: 'alerts' })
      .whereIn('episode_id', ids)
      .groupBy('episode_id')) as Array<{ episode_id: string; services: number | string; alerts: number | string | null }>;
    return new Map(rows.map((r) => [r.episode_id, { services: Number(r.services), alerts: Number(r.alerts ?? 0) }]));
  }

  /** The services a storm holds most alerts of, most first. */
  async top(id: string, limit: number): Promise<Array<{ service: string; alerts: number }>> {
    const q = this.#db('storm_services').select('service', 'alerts').where({ episode_id: id });
    const rows = (await q.orderBy([{ column: 'alerts', order: 'desc' }, { column: 'service' }]).limit(limit)) as Array<{
      service: string;
      alerts: number | string;
    }>;
    return rows.map((r) => ({ service: r.service, alerts: Number(r.alerts) }));
  }
}
