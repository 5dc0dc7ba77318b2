import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SECOND } from '../host/clock.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from './helpers/app.ts';
import { MARIADB_URL, mariadbTest, withServer, type TestStore } from './helpers/db.ts';

const HOOK_SECRET = 'whsec-Q7v2-never-shown-0123456789';

const push = (ta: TestApp, alerts: unknown[]) => ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { alerts } });
const fire = (name: string, service: string) => ({ name, service, severity: 'critical', status: 'firing', id: `${service}-${name}`, summary: `${name} on ${service}` });
const events = async (ta: TestApp, type: string) => (await ta.call('GET', `/v1/ledger?type=${type}&order=asc&limit=2000`)).body.events as any[];

await mariadbTest('two hosts on one MariaDB database never deliver one notification twice', async (t) => {
  // Whatever the pass, a throwaway database on the MariaDB server (the two hosts share it and a data directory).
  const name = `t_${randomBytes(6).toString('hex')}`;
  await withServer(MARIADB_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`));
  const url = new URL(MARIADB_URL);
  url.pathname = `/${name}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oncall-notify-'));
  const store: TestStore = { dataDir, databaseUrl: url.toString(), cleanup: async () => {} };
  t.teardown(async () => {
    await withServer(MARIADB_URL, (db) => db.raw(`drop database if exists \`${name}\``));
    rmSync(dataDir, { recursive: true, force: true });
  });
  const got: Buffer[] = [];
  const srv = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push(Buffer.concat(chunks));
      res.statusCode = 200;
      res.end();
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => (srv.closeAllConnections(), srv.close(() => resolve()))));
  const hook = { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hook` };
  const a = await startApp(t, { store });
  await makeOperating(a);
  const b = await startApp(t, { store, clock: a.clock });
  t.is((await a.call('PUT', '/v1/connectors/hook', { body: { kind: 'webhook', settings: { url: hook.url, secret: HOOK_SECRET } } })).status, 201);
  t.is((await a.call('PUT', '/v1/settings/notifications', { body: { targets: ['hook'] } })).status, 200);
  const services = Array.from({ length: 10 }, (_, i) => `svc-${i}`);
  await push(a, services.map((s) => fire('Down', s)));
  a.clock.advance(20 * SECOND);
  await Promise.all([a.app.tick(), b.app.tick(), a.app.tick(), b.app.tick()]);
  await Promise.all([a.app.notifications.run(), b.app.notifications.run()]);
  const ids = got.map((g) => JSON.parse(g.toString('utf8')).episode.id as string);
  t.is(ids.length, services.length, 'every incident told once');
  t.is(new Set(ids).size, services.length, 'none twice');
  t.is((await events(a, 'outcome.notified')).length, services.length);
});
