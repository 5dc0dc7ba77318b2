import { createServer, request, Agent } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import knex from 'knex';
import { startServiceProcess, type ServiceProcess } from '../helpers/service-process.ts';
import { startSmtp } from '../helpers/smtp.ts';
import { testVendor } from '../helpers/app.ts';
import { mariadbMissing } from '../helpers/db.ts';
import { startHostProcesses, type HostProcess } from '../helpers/host-process.ts';
import { testNeeding } from '../helpers/needs.ts';
import { waitFor } from '../helpers/wait.ts';

/*
 * SIGTERM to a real host process (`node host/main.ts`) while an SMTP relay hangs on a message,
 * a keep-alive client holds an idle connection and another client is half way through sending a
 * request: the process exits 0 within 10 s, the idle connection is closed at once, the request
 * in flight is answered, and the delivery it had claimed is given back, so that the host started
 * again on the same data directory sends it at its first tick instead of after the lease.
 */

const missing = await mariadbMissing();
const ADMIN_TOKEN = 'admin-token-for-shutdown-processes-0123456789';
const INGEST_TOKEN = 'ingest-token-for-shutdown-processes-012345678';
const ONCALL = 'oncall@bank.example';

async function call(h: ServiceProcess, method: string, route: string, body?: unknown, token = ADMIN_TOKEN): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(h.base + route, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : JSON.parse(text) };
}

test('SQLite: SIGTERM with a hanging SMTP relay and keep-alive clients: exit 0 within 10 s, the request in flight answered, the claimed delivery given back and sent at once after a restart', async (t) => {
  t.timeout(120_000);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oncall-shutdown-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const smtp = await startSmtp(t);
  const env = {
    SERVICE_DATA_DIR: dataDir,
    SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
    SERVICE_INGEST_TOKEN: INGEST_TOKEN,
    SERVICE_SECRET_KEY: 'secret-key-of-the-shutdown-processes-test-01',
    SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
    SERVICE_LICENCE_CHECK: 'offline',
    SERVICE_MAIL_CA_FILE: smtp.caFile,
    SERVICE_DEBOUNCE_S: '0',
  };
  const host = await startServiceProcess(t, env);
  t.is((await call(host, 'POST', '/v1/licence/redeem', { customer: 'Shutdown Bank' })).status, 201);
  t.is((await call(host, 'POST', '/v1/auth/bootstrap', { email: 'owner@bank.example', name: 'Owner' })).status, 201);
  t.is((await call(host, 'PUT', '/v1/settings/mail', { smtp_host: smtp.host, smtp_port: smtp.port, mail_from: 'oncall-service@bank.example' })).status, 200);
  t.is((await call(host, 'POST', '/v1/people', { email: ONCALL, name: 'On Call', role: 'viewer' })).status, 201);
  t.is((await call(host, 'PUT', '/v1/settings/notifications', { recipients: [ONCALL], targets: [] })).status, 200);
  const { version: _v, source: _s, updated_at: _u, updated_by: _b, ...policy } = (await call(host, 'GET', '/v1/policy')).body;
  t.is((await call(host, 'PUT', '/v1/policy', { ...policy, default_autonomy: 'off' })).status, 200);

  // The relay reads the incident's e-mail and never answers (the service waits up to 30 s).
  smtp.refuse('hang');
  const fired = await call(host, 'POST', '/v1/alerts/generic', { name: 'Down', service: 'payments', severity: 'critical', id: 'payments-down' }, INGEST_TOKEN);
  t.true(fired.status < 300, JSON.stringify(fired.body));
  await waitFor('the relay to hang on the incident e-mail', async () => smtp.hung() >= 1, 30_000);

  // A keep-alive client with an idle connection, and a request whose body is still coming.
  const agent = new Agent({ keepAlive: true });
  t.teardown(() => agent.destroy());
  let idleClosedAt = 0;
  await new Promise<void>((resolve, reject) => {
    const req = request(`${host.base}/health`, { agent }, (res) => {
      res.resume();
      res.once('end', () => resolve());
    });
    req.once('socket', (s) => s.once('close', () => (idleClosedAt = Date.now())));
    req.once('error', reject);
    req.end();
  });
  const body = JSON.stringify({ name: 'Slow', service: 'ledger', severity: 'warning', id: 'ledger-slow' });
  const slow = request(`${host.base}/v1/alerts/generic`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), expect: '100-continue' },
  });
  // The service's "100 Continue" says it has read the request's head: the request is in flight,
  // not an idle connection (a fixed wait here could end before a loaded host had read it).
  const continued = new Promise<void>((resolve) => slow.once('continue', () => resolve()));
  const answered = new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
    slow.once('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, connection: res.headers.connection });
    });
    slow.once('error', reject);
  });
  slow.flushHeaders();
  await continued;
  slow.write(body.slice(0, 10));

  const signalledAt = Date.now();
  const exited = host.stop();
  await new Promise((r) => setTimeout(r, 500)); // the rest of the body comes half a second into the shutdown
  slow.end(body.slice(10));
  const inFlight = await answered;
  const code = await exited;
  const took = Date.now() - signalledAt;
  t.is(code, 0, host.output());
  t.true(took <= 10_000, `exited ${took} ms after SIGTERM`);
  t.true(inFlight.status < 300, `the request in flight was answered ${inFlight.status}`);
  t.is(inFlight.connection, 'close', 'and its connection closed after it');
  // At once: well before Node's keep-alive timeout (5 s) or the exit would close it; a loaded
  // machine can take a second or more to run the host's sweep.
  t.true(idleClosedAt > 0 && idleClosedAt - signalledAt < 2_500, `the idle keep-alive connection was closed at once (${idleClosedAt - signalledAt} ms)`);

  // Everything this host held is given back: the delivery, and every lease.
  const db = knex({ client: 'better-sqlite3', connection: { filename: path.join(dataDir, 'service.db') }, useNullAsDefault: true });
  const outbox = (await db('notify_outbox').select('state', 'lease_holder', 'lease_until_ms')) as Array<{ state: string; lease_until_ms: number | null }>;
  t.true(outbox.length >= 1);
  t.true(
    outbox.every((o) => o.state !== 'pending' || o.lease_until_ms === null || Number(o.lease_until_ms) <= signalledAt),
    `no delivery left under a lease: ${JSON.stringify(outbox)}`,
  );
  const leases = (await db('leases').select('name', 'until_ms')) as Array<{ name: string; until_ms: number }>;
  t.true(
    leases.every((l) => Number(l.until_ms) <= signalledAt),
    `no lease left: ${JSON.stringify(leases)}`,
  );
  await db.destroy();

  // Started again, with the relay answering: the e-mail goes at the first tick (10 s), not after the lease (2 min).
  smtp.refuse(null);
  const again = await startServiceProcess(t, env);
  t.teardown(() => void again.stop());
  const mail = await smtp.message(0, 20_000);
  t.true(mail.subject.includes('payments'), mail.subject);
  const episodes = (await call(again, 'GET', '/v1/episodes?limit=10')).body.episodes as any[];
  const payments = episodes.find((e) => e.service === 'payments');
  const notified = (await call(again, 'GET', '/v1/ledger?type=outcome.notified&limit=50')).body.events as any[];
  t.is(notified.filter((e) => e.data.episode === payments.id && e.data.event === 'incident.opened').length, 1, 'told once');
  t.is((await again.stop()) ?? 0, 0);
});

testNeeding(
  missing,
  'MariaDB, two hosts: SIGTERM to the host sending a message to a target that never answers: exit 0 within 10 s, the delivery given back, and the other host sends it',
  async (t) => {
    t.timeout(180_000);
    // A target that never answers the first message it gets, and accepts every later one.
    const accepted: string[] = [];
    let got = 0;
    const hook = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (++got === 1) return;
        accepted.push(JSON.parse(Buffer.concat(chunks).toString('utf8')).episode.service);
        res.end();
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => (hook.closeAllConnections(), hook.close(() => resolve()))));
    const hosts = await startHostProcesses(t, 2, {
      SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
      SERVICE_INGEST_TOKEN: INGEST_TOKEN,
      SERVICE_SECRET_KEY: 'secret-key-shared-by-both-shutdown-hosts-01',
      SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
      SERVICE_LICENCE_CHECK: 'offline',
      SERVICE_DEBOUNCE_S: '0',
    });
    const a = hosts[0]!;
    const as = (h: HostProcess) => ({ base: h.base }) as ServiceProcess;
    t.is((await call(as(a), 'POST', '/v1/licence/redeem', { customer: 'Shutdown Bank' })).status, 201);
    t.is((await call(as(a), 'POST', '/v1/auth/bootstrap', { email: 'owner@bank.example', name: 'Owner' })).status, 201);
    const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
    // The target waits longer than the shutdown's deadline.
    t.is(
      (await call(as(a), 'PUT', '/v1/connectors/hook', { kind: 'webhook', settings: { url, secret: 'whsec-shutdown-0123456789abcdef', timeout_s: 15 } }))
        .status,
      201,
    );
    t.is((await call(as(a), 'PUT', '/v1/settings/notifications', { recipients: [], targets: ['hook'] })).status, 200);
    const { version: _v, source: _s, updated_at: _u, updated_by: _b, ...policy } = (await call(as(a), 'GET', '/v1/policy')).body;
    t.is((await call(as(a), 'PUT', '/v1/policy', { ...policy, default_autonomy: 'off' })).status, 200);
    t.true((await call(as(a), 'POST', '/v1/alerts/generic', { name: 'Down', service: 'payments', severity: 'critical', id: 'p' }, INGEST_TOKEN)).status < 300);
    await waitFor('the message to hang at the target', async () => got >= 1, 60_000);

    const db = knex({ client: 'mysql2', connection: a.databaseUrl });
    t.teardown(() => db.destroy());
    const holder = ((await db('notify_outbox').where({ state: 'pending' }).whereNotNull('lease_holder').first()) as { lease_holder: string }).lease_holder;
    const sender = hosts.find((h) => h.pid === Number(holder.split(':')[1]))!;
    const other = hosts.find((h) => h !== sender)!;
    const signalledAt = Date.now();
    process.kill(sender.pid, 'SIGTERM');
    await waitFor('the sender to exit', async () => sender.exited(), 12_000, 50);
    const took = Date.now() - signalledAt;
    t.true(took <= 10_000, `exited ${took} ms after SIGTERM`);
    t.is(sender.exitCode(), 0, sender.output());
    const row = (await db('notify_outbox').where({ state: 'pending' }).first()) as { lease_until_ms: number | string } | undefined;
    t.true(row === undefined || Number(row.lease_until_ms) <= signalledAt, 'the delivery was given back');
    t.true((await db('leases').where('holder', 'like', `%:${sender.pid}:%`).andWhere('until_ms', '>', signalledAt)).length === 0, 'and every lease');
    await waitFor('the other host to send it', async () => accepted.includes('payments'), 20_000, 100);
    t.deepEqual(accepted, ['payments'], 'accepted once');
    t.true((await call(as(other), 'GET', '/v1/ledger/verify')).body.ok);
  },
);
