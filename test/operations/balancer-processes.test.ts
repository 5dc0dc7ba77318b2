import { existsSync } from 'node:fs';
import { INGEST_TOKEN, signLicence, testVendor } from '../helpers/app.ts';
import { mariadbMissing } from '../helpers/db.ts';
import { startHostProcesses, type HostProcess } from '../helpers/host-process.ts';
import { testNeeding } from '../helpers/needs.ts';
import { waitFor } from '../helpers/wait.ts';
import { HAPROXY_BIN, startHaproxy } from '../helpers/web-tier.ts';

/*
 * Three host processes on one MariaDB behind Debian's HAProxy, as an operator runs them: the
 * balancer spreads every request (pushes, reads, sign-in) round-robin over the three, health-checks
 * GET /health/ready, and retries a refused connection on another host. Alerts of ten services
 * pushed at once through it open one episode per service, each investigated once; a host killed
 * meanwhile costs nothing acknowledged; the doctor, through the balancer, says which host holds
 * which lease. (Each schedule run by one host, and a dead host's investigation and delivery taken
 * over within 30 s: test/operations/lease-handover-processes.test.ts and the other *-processes tests.)
 */

const ADMIN_TOKEN = 'admin-token-for-the-balancer-processes-test-01';
const SERVICES = Array.from({ length: 10 }, (_, i) => `svc-${String(i).padStart(2, '0')}`);
const db = await mariadbMissing();
const missing = db ?? (existsSync(HAPROXY_BIN) ? null : `${HAPROXY_BIN} not found (apt-get install haproxy)`);

async function call(base: string, method: string, route: string, body?: unknown, token = ADMIN_TOKEN) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + route, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, by: res.headers.get('x-served-by'), body: text === '' ? null : JSON.parse(text) };
}

testNeeding(
  missing,
  "three hosts on one MariaDB behind HAProxy: pushes spread over all three open one episode per service, each investigated once; a host killed loses no acknowledged alert; the doctor names each lease's host",
  async (t) => {
    t.timeout(300_000);
    const hosts: HostProcess[] = await startHostProcesses(t, 3, {
      SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
      SERVICE_INGEST_TOKEN: INGEST_TOKEN,
      SERVICE_SECRET_KEY: 'secret-key-shared-by-the-balanced-hosts-0123',
      SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
      SERVICE_LICENCE_CHECK: 'offline',
      SERVICE_DEBOUNCE_S: '0',
      SERVICE_STORM_PER_SOURCE: '100',
    });
    const servers = Object.fromEntries(hosts.map((h, i) => [`host${i + 1}`, h.base.replace(/^http:\/\//, '')]));
    const lb = await startHaproxy(t, { servers, checkPath: '/health/ready', serviceHosts: true });
    const base = `http://${lb.address}`;

    t.is((await call(base, 'POST', '/v1/licence', { licence: signLicence() })).status, 200);
    t.is((await call(base, 'POST', '/v1/auth/bootstrap', { email: 'owner@bank.example', name: 'Owner' })).status, 201);

    // Three alerts of each of ten services, all at once, through the balancer.
    const pushes = await Promise.all(
      SERVICES.flatMap((service) =>
        [1, 2, 3].map((n) =>
          call(base, 'POST', '/v1/alerts/generic', { name: 'HighErrorRate', service, severity: 'critical', id: `${service}-${n}` }, INGEST_TOKEN),
        ),
      ),
    );
    t.deepEqual(
      pushes.map((p) => p.status),
      pushes.map(() => 202),
    );
    t.deepEqual([...new Set(pushes.map((p) => p.by))].sort(), Object.keys(servers).sort(), 'every host took pushes');

    // One episode per service, each diagnosed once.
    const episodes = async () => (await call(base, 'GET', '/v1/episodes?limit=100')).body.episodes as Array<{ id: string; service: string }>;
    await waitFor(
      'every service to have a diagnosed episode',
      async () => {
        const list = await episodes();
        if (list.length < SERVICES.length) return false;
        const states = await Promise.all(list.map(async (e) => (await call(base, 'GET', `/v1/episodes/${e.id}`)).body.investigation?.state));
        return states.every((s) => s === 'diagnosed');
      },
      120_000,
      500,
    );
    const list = await episodes();
    t.deepEqual(list.map((e) => e.service).sort(), SERVICES, 'one episode per service');
    for (const e of list) {
      const full = (await call(base, 'GET', `/v1/episodes/${e.id}`)).body;
      t.is(full.signals.length, 3, `${e.service}: its three alerts in its one episode`);
      const types = (full.timeline as Array<{ type: string }>).map((x) => x.type);
      t.is(types.filter((x) => x === 'decision.diagnosed').length, 1, `${e.service}: diagnosed once`);
      t.is(types.filter((x) => x === 'check.started').length, 1, `${e.service}: one investigation run`);
    }

    // A host killed: the balancer's health check takes it out and its retry sends a refused push
    // on; every push answered 202 is in an episode.
    const victim = hosts[1]!;
    process.kill(victim.pid, 'SIGKILL');
    await waitFor('the killed host to be gone', async () => victim.exited(), 10_000);
    const late = await Promise.all(
      SERVICES.map((service) =>
        call(base, 'POST', '/v1/alerts/generic', { name: 'HighLatency', service, severity: 'warning', id: `${service}-late` }, INGEST_TOKEN),
      ),
    );
    t.deepEqual(
      late.map((p) => p.status),
      late.map(() => 202),
      'no push lost to the dead host',
    );
    t.false(
      late.some((p) => p.by === 'host2'),
      'nothing answered by the dead host',
    );
    await waitFor(
      'the late alerts to join their episodes',
      async () => {
        const all = await Promise.all((await episodes()).map(async (e) => (await call(base, 'GET', `/v1/episodes/${e.id}`)).body.signals.length as number));
        return all.length === SERVICES.length && all.every((n) => n === 4);
      },
      60_000,
      500,
    );

    // The doctor, asked through the balancer, names the host process of each lease held now.
    const doctor = (await call(base, 'GET', '/v1/doctor?fresh=1')).body.components as Array<{ name: string; status: string; detail: string }>;
    const leases = doctor.find((c) => c.name === 'leases')!;
    t.is(leases.status, 'ok');
    t.regex(leases.detail, /^(no lease is held now|held now by .+)/);
    t.true((await call(base, 'GET', '/v1/ledger/verify')).body.ok);
  },
);
