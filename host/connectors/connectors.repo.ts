import type { Db, Trx } from '../storage/db.ts';

/** A console-added connector as stored: settings without secrets, secrets sealed. */
export interface ConnectorRow {
  name: string;
  kind: string;
  /** The settings with every writeOnly field taken out. */
  settings: Record<string, unknown>;
  /** JSON pointer of each writeOnly field that is set -> its value sealed by the cipher. */
  secrets: Record<string, string>;
  created_at: string;
  updated_at: string;
  updated_by: string;
}

/** The outcome of the last check of one connector (console- or file-managed). */
export interface ConnectorStatus {
  name: string;
  kind: string;
  ok: boolean;
  last_problem: string | null;
  last_checked_at: string;
  found: Record<string, unknown> | null;
  /** Which call set `last_problem` (a test or check, or a poll); null when `ok`. */
  failed_by: FailedBy | null;
}

/** The calls whose failure becomes a connector's last problem. */
export type FailedBy = 'test' | 'poll';

interface RawRow extends Omit<ConnectorRow, 'settings' | 'secrets'> {
  settings: string;
  secrets: string;
}

interface RawStatus extends Omit<ConnectorStatus, 'ok' | 'found' | 'failed_by'> {
  ok: number | boolean;
  found: string | null;
  failed_by: string | null;
}

const fromRaw = (r: RawRow): ConnectorRow => ({
  ...r,
  settings: JSON.parse(r.settings) as Record<string, unknown>,
  secrets: JSON.parse(r.secrets) as Record<string, string>,
});
const statusFromRaw = (r: RawStatus): ConnectorStatus => ({
  ...r,
  ok: r.ok === true || r.ok === 1,
  found: r.found === null ? null : (JSON.parse(r.found) as Record<string, unknown>),
  failed_by: r.failed_by === 'poll' || r.failed_by === 'test' ? r.failed_by : null,
});

/** The only code that touches `connectors` and `connector_status`. */
export class ConnectorsRepo {
  readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  async list(trx?: Trx): Promise<ConnectorRow[]> {
    const rows = (await (trx ?? this.db)('connectors').select('*').orderBy('name')) as RawRow[];
    return rows.map(fromRaw);
  }

  async get(name: string, trx?: Trx): Promise<ConnectorRow | null> {
    const row = (await (trx ?? this.db)('connectors').select('*').where({ name }).first()) as RawRow | undefined;
    return row === undefined ? null : fromRaw(row);
  }

  /** Inserts or replaces the row; `created_at` of an existing row is kept. */
  async upsert(trx: Trx, row: ConnectorRow): Promise<void> {
    await trx('connectors')
      .insert({ ...row, settings: JSON.stringify(row.settings), secrets: JSON.stringify(row.secrets) })
      .onConflict('name')
      .merge(['kind', 'settings', 'secrets', 'updated_at', 'updated_by']);
  }

  /** Removes the connector and its status; answers whether there was one. */
  async remove(trx: Trx, name: string): Promise<boolean> {
    const n = await trx('connectors').where({ name }).delete();
    await trx('connector_status').where({ name }).delete();
    return n > 0;
  }

  async statuses(trx?: Trx): Promise<Map<string, ConnectorStatus>> {
    const rows = (await (trx ?? this.db)('connector_status').select('*')) as RawStatus[];
    return new Map(rows.map((r) => [r.name, statusFromRaw(r)]));
  }

  async status(name: string, trx?: Trx): Promise<ConnectorStatus | null> {
    const row = (await (trx ?? this.db)('connector_status').select('*').where({ name }).first()) as RawStatus | undefined;
    return row === undefined ? null : statusFromRaw(row);
  }

  async putStatus(s: ConnectorStatus, trx?: Trx): Promise<void> {
    const run = (t: Trx) =>
      t('connector_status')
        .insert({ ...s, found: s.found === null ? null : JSON.stringify(s.found) })
        .onConflict('name')
        .merge();
    if (trx !== undefined) await run(trx);
    else await this.db.transaction(run);
  }

  /** Forgets the status of a connector (its settings changed, so the last check no longer holds). */
  async clearStatus(trx: Trx, name: string): Promise<void> {
    await trx('connector_status').where({ name }).delete();
  }
}
