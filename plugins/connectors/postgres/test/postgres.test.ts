// The postgres connector's own test, beside it: its test and a read of a declared `sql` statement
// against the machine's PostgreSQL (127.0.0.1:5432, user postgres trusted on loopback, database
// test; PG_TEST_HOST, PG_TEST_PORT, PG_TEST_USER, PG_TEST_DATABASE point it elsewhere). It
// imports nothing of the host but the contract module, so the folder can be copied and tested
// alone. Without a PostgreSQL there the tests are skipped with the reason (failed under CI=true).
// test/plugins/sql-connectors.test.ts adds a monitoring account's grants and the statement timeout.
import { fileURLToPath } from 'node:url';
import test from 'ava';
import pg from 'pg';
import { connectorContext, loadPluginFolder, nothingListening, testNeeding } from '../../../../host/plugins/contract.ts';
import type { ConnectorPluginWithCapabilities, ConnectorReadRequest } from '../../../../host/plugins/contract.ts';

const DIR = fileURLToPath(new URL('..', import.meta.url));
const SETTINGS = {
  host: process.env.PG_TEST_HOST ?? '127.0.0.1',
  port: Number(process.env.PG_TEST_PORT ?? 5432),
  user: process.env.PG_TEST_USER ?? 'postgres',
  database: process.env.PG_TEST_DATABASE ?? 'test',
  timeout_s: 5,
};
const missing = await nothingListening('PostgreSQL', SETTINGS.host, SETTINGS.port);

const declared = (text: string): ConnectorReadRequest => ({
  capability: 'sql',
  request: { name: 'numbers' },
  declared: { pack: 'vendor', name: 'numbers', value: { dialect: 'postgres', text } },
});
const plugin = async () => (await loadPluginFolder(DIR)).plugin as ConnectorPluginWithCapabilities;

testNeeding(test, missing, 'test reports the version and which declared statements the account may run; a closed port is a problem', async (t) => {
  const postgres = await plugin();
  const ctx = connectorContext(SETTINGS);
  ctx.named = { sql: { 'vendor/numbers': { dialect: 'postgres', text: 'SELECT 1 AS n' }, 'vendor/other': { dialect: 'mysql', text: 'SELECT 1' } } };
  const r = await postgres.test(ctx);
  t.true(r.ok, String(r.problem));
  t.like(r, { problem: null, found: { user: SETTINGS.user, replica: false, statements: { 'vendor/numbers': 'may run' } } });
  const found = (r as unknown as { found: { version: string; statements: Record<string, string> } }).found;
  t.regex(found.version, /^\d+\.\d+/);
  t.false('vendor/other' in found.statements, 'another dialect is not tried');
  t.deepEqual(await postgres.test(connectorContext({ ...SETTINGS, port: 1 })), {
    ok: false,
    problem: `cannot connect to ${SETTINGS.host}:1: connection refused`,
  });
});

testNeeding(test, missing, 'read runs a declared statement with its parameters, cut at max_rows; a write is refused', async (t) => {
  const postgres = await plugin();
  const read = postgres.read!;
  const r = await read(connectorContext({ ...SETTINGS, max_rows: 2 }), {
    ...declared('SELECT n, n * $1::int AS scaled FROM generate_series(1, 5) AS n'),
    request: { name: 'numbers', params: [10] },
  });
  t.like(r, {
    ok: true,
    problem: null,
    answer: {
      columns: ['n', 'scaled'],
      rows: [
        [1, 10],
        [2, 20],
      ],
      truncated: true,
    },
    shown: 'SELECT n, n * $1::int AS scaled FROM generate_series(1, 5) AS n',
  });
  t.is(typeof (r.answer as { took_ms: unknown }).took_ms, 'number');
  // A write, made possible by a sequence of the test's own: the read-only transaction refuses it.
  const own = new pg.Client({ ...SETTINGS, connectionTimeoutMillis: 5000 });
  await own.connect();
  const sequence = `oncall_folder_test_${process.pid}`;
  await own.query(`CREATE SEQUENCE ${sequence}`);
  t.teardown(async () => (await own.query(`DROP SEQUENCE IF EXISTS ${sequence}`), await own.end()));
  t.deepEqual(await read(connectorContext(SETTINGS), declared(`SELECT nextval('${sequence}')`)), {
    ok: false,
    problem: 'refused in a read-only transaction: cannot execute nextval() in a read-only transaction',
  });
  t.deepEqual(await read(connectorContext(SETTINGS), { capability: 'sql', request: { name: 'numbers' } }), {
    ok: false,
    problem: 'no postgres statement was declared for this read',
  });
});
