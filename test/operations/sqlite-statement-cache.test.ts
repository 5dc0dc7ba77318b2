import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openDb, PREPARED_CACHE_SIZE } from '../../host/storage/db.ts';

interface Stmt {
  busy: boolean;
  all(...p: unknown[]): unknown[];
  iterate(...p: unknown[]): IterableIterator<unknown>;
}
interface Conn {
  prepare(sql: string): Stmt;
}

function sqlite(t: { teardown(fn: () => unknown): void }) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'stmt-cache-'));
  const db = openDb({ databaseUrl: null, dataDir });
  t.teardown(async () => {
    await db.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return db;
}

async function connection(db: ReturnType<typeof openDb>): Promise<Conn> {
  const client = db.client as { acquireConnection(): Promise<Conn>; releaseConnection(c: Conn): Promise<unknown> };
  const conn = await client.acquireConnection();
  await client.releaseConnection(conn);
  return conn;
}

test('SQLite: the same statement text is prepared once and handed back, whatever the values', async (t) => {
  const db = sqlite(t);
  const conn = await connection(db);
  const first = conn.prepare('select ? as n');
  t.is(conn.prepare('select ? as n'), first);
  t.not(conn.prepare('select ? as m'), first);
  t.deepEqual(first.all(1), [{ n: 1 }]);
  t.deepEqual(conn.prepare('select ? as n').all(2), [{ n: 2 }]);
});

test('SQLite: Knex queries go through the cache (the statement Knex ran is the cached one)', async (t) => {
  const db = sqlite(t);
  await db.schema.createTable('things', (tb) => {
    tb.integer('id').primary();
    tb.text('name');
  });
  const conn = await connection(db);
  const seen = new Set<Stmt>();
  const prepare = conn.prepare;
  conn.prepare = (sql: string) => {
    const s = prepare(sql);
    if (sql.startsWith('insert into `things`')) seen.add(s);
    return s;
  };
  for (let i = 0; i < 5; i++) await db('things').insert({ id: i, name: `n${i}` });
  t.is(seen.size, 1);
  t.deepEqual(await db('things').where('id', 3).first(), { id: 3, name: 'n3' });
});

test('SQLite: a statement still being iterated is not handed out again', async (t) => {
  const db = sqlite(t);
  const conn = await connection(db);
  const s = conn.prepare('select 1 as n union all select 2');
  const it = s.iterate();
  it.next();
  t.true(s.busy);
  const other = conn.prepare('select 1 as n union all select 2');
  t.not(other, s);
  t.deepEqual(other.all(), [{ n: 1 }, { n: 2 }]);
  it.return?.();
});

test(`SQLite: the cache keeps the last ${PREPARED_CACHE_SIZE} texts, dropping the least recently used`, async (t) => {
  const db = sqlite(t);
  const conn = await connection(db);
  const oldest = conn.prepare('select 0 as n');
  const kept = conn.prepare('select -1 as n');
  for (let i = 1; i <= PREPARED_CACHE_SIZE; i++) {
    conn.prepare(`select ${i} as n`);
    if (i === PREPARED_CACHE_SIZE - 10) t.is(conn.prepare('select -1 as n'), kept); // used again: kept
  }
  t.not(conn.prepare('select 0 as n'), oldest);
  t.is(conn.prepare('select -1 as n'), kept);
});
