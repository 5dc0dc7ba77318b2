import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { INGEST_TOKEN, makeOperating, startApp } from '../helpers/app.ts';
import { MARIADB_URL, mariadbTest, withServer } from '../helpers/db.ts';
import { tcpProxy } from '../helpers/tcp-proxy.ts';
import { waitFor } from '../helpers/wait.ts';

/*
 * MySQL/MariaDB queries have timeouts (SERVICE_DATABASE_TIMEOUT_S): a database that hangs (every
 * byte held by a frozen relay, as a SIGSTOPped mariadbd or a frozen VM holds them) gives fast 503s
 * `storage_unavailable`, reads and writes alike, instead of requests that never end; once it
 * answers again the service does too.
 */

await mariadbTest('MariaDB frozen: reads and writes answer 503 storage_unavailable within the database timeout, and 2xx once it answers again', async (t) => {
  t.timeout(120_000);
  const name = `t_${randomBytes(6).toString('hex')}`;
  await withServer(MARIADB_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`));
  const server = new URL(MARIADB_URL);
  const proxy = await tcpProxy(t, { host: server.hostname, port: Number(server.port || 3306) });
  const url = new URL(MARIADB_URL);
  url.host = `127.0.0.1:${proxy.port}`;
  url.pathname = `/${name}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oncall-frozen-'));
  const store = {
    dataDir,
    databaseUrl: url.toString(),
    cleanup: async () => {
      await withServer(MARIADB_URL, (db) => db.raw(`drop database if exists \`${name}\``));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  t.teardown(() => store.cleanup());
  const ta = await startApp(t, { manualTick: true, store, env: { SERVICE_DATABASE_TIMEOUT_S: '2' } });
  // The app is closed after the test: with the database answering again.
  t.teardown(() => proxy.thaw());
  const alert = (id: string) => ({ token: INGEST_TOKEN, body: { name: 'Down', service: 'payments', severity: 'critical', id } });
  await makeOperating(ta);
  t.true((await ta.call('POST', '/v1/alerts/generic', alert('before'))).status < 300);

  proxy.freeze();
  for (const [what, call] of [
    ['a read', () => ta.call('GET', '/v1/ledger?limit=1')],
    ['a write', () => ta.call('POST', '/v1/alerts/generic', alert('frozen'))],
    ['a read on a new connection', () => ta.call('GET', '/v1/episodes')],
  ] as const) {
    const started = Date.now();
    const res = await call();
    const took = Date.now() - started;
    t.is(res.status, 503, `${what}: ${JSON.stringify(res.body)}`);
    t.true(['storage_unavailable', 'ledger_unavailable'].includes(res.body.error), `${what}: ${JSON.stringify(res.body)}`);
    // Within two timeouts (a wait for a connection, then for the statement) and slack, not hung.
    t.true(took < 7_000, `${what} answered after ${took} ms (timeout 2 s)`);
  }

  proxy.thaw();
  let last: unknown = null;
  await waitFor(
    'the service to answer again',
    async () => {
      const r = await ta.call('POST', '/v1/alerts/generic', alert('back'));
      last = r;
      return r.status < 300;
    },
    30_000,
    250,
  ).catch((e: Error) => t.fail(`${e.message}: ${JSON.stringify(last)}`));
  t.is((await ta.call('GET', '/v1/ledger?limit=1')).status, 200);
  t.true((await ta.app.verifyLedger()).ok);
});
