// The mysql connector's own test, beside it: its test and a read of a declared `sql` statement
// against the machine's MariaDB (127.0.0.1:3306 as root without a password; MYSQL_TEST_HOST,
// MYSQL_TEST_PORT, MYSQL_TEST_USER, MYSQL_TEST_PASSWORD point it elsewhere). It imports nothing of
// the host but the contract module, so the folder can be copied and tested alone. Without a server
// there the tests are skipped with the reason (failed under CI=true).
// test/plugins/sql-connectors.test.ts adds a monitoring account's grants and the statement timeout.
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { connectorContext, loadPluginFolder, nothingListening, testNeeding } from '../../../../host/plugins/contract.ts';
import type { ConnectorPluginWithCapabilities, ConnectorReadRequest } from '../../../../host/plugins/contract.ts';

const DIR = fileURLToPath(new URL('..', import.meta.url));
const SETTINGS = {
  host: process.env.MYSQL_TEST_HOST ?? '127.0.0.1',
  port: Number(process.env.MYSQL_TEST_PORT ?? 3306),
  user: process.env.MYSQL_TEST_USER ?? 'root',
  ...(process.env.MYSQL_TEST_PASSWORD === undefined ? {} : { password: process.env.MYSQL_TEST_PASSWORD }),
  timeout_s: 5,
};
const missing = await nothingListening('MariaDB or MySQL', SETTINGS.host, SETTINGS.port);

const declared = (text: string): ConnectorReadRequest => ({
  capability: 'sql',
  request: { name: 'numbers' },
  declared: { pack: 'vendor', name: 'numbers', value: { dialect: 'mysql', text } },
});
const plugin = async () => (await loadPluginFolder(DIR)).plugin as ConnectorPluginWithCapabilities;
const NUMBERS = 'SELECT 1 AS n, ? AS label UNION ALL SELECT 2, ? UNION ALL SELECT 3, ?';

testNeeding(test, missing, 'test reports the version and which declared statements the account may run; a closed port is a problem', async (t) => {
  const mysql = await plugin();
  const ctx = connectorContext(SETTINGS);
  ctx.named = { sql: { 'vendor/one': { dialect: 'mysql', text: 'SELECT 1 AS n' }, 'vendor/other': { dialect: 'postgres', text: 'SELECT 1' } } };
  const r = await mysql.test(ctx);
  t.true(r.ok, String(r.problem));
  t.like(r, { problem: null, found: { statements: { 'vendor/one': 'may run' } } });
  const found = (r as unknown as { found: { version: string; user: string; statements: Record<string, string> } }).found;
  t.regex(found.version, /^\d+\.\d+/);
  t.true(found.user.startsWith(`${SETTINGS.user}@`), found.user);
  t.false('vendor/other' in found.statements, 'another dialect is not tried');
  t.deepEqual(await mysql.test(connectorContext({ ...SETTINGS, port: 1 })), { ok: false, problem: `cannot connect to ${SETTINGS.host}:1: connection refused` });
});

testNeeding(test, missing, 'read runs a declared statement with its parameters, cut at max_rows; a write cannot even be wrapped', async (t) => {
  const mysql = await plugin();
  const read = mysql.read!;
  const r = await read(connectorContext({ ...SETTINGS, max_rows: 2 }), { ...declared(NUMBERS), request: { name: 'numbers', params: ['a', 'b', 'c'] } });
  t.like(r, {
    ok: true,
    problem: null,
    answer: {
      columns: ['n', 'label'],
      rows: [
        [1, 'a'],
        [2, 'b'],
      ],
      truncated: true,
    },
    shown: NUMBERS,
  });
  t.is(typeof (r.answer as { took_ms: unknown }).took_ms, 'number');
  const write = await read(connectorContext(SETTINGS), declared('DELETE FROM oncall_no_such_table'));
  t.false(write.ok, 'a statement that is not a query is refused');
  t.regex(String(write.problem), /SQL syntax/);
  t.deepEqual(await read(connectorContext(SETTINGS), { capability: 'sql', request: { name: 'numbers' } }), {
    ok: false,
    problem: 'no mysql statement was declared for this read',
  });
});
