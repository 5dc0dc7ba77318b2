// Issue 22, item 7, with two host processes (`node host/main.ts`) on one MariaDB: alerts of forty
// services the estate does not have, pushed through both hosts at once, open exactly
// SERVICE_STORM_PER_SOURCE episodes between them; the rest join one storm episode; a service the
// estate has still opens its own. Both hosts group at once: the limit holds across them.
import { INGEST_TOKEN, signLicence, testVendor } from '../helpers/app.ts';
import { mariadbTest } from '../helpers/db.ts';
import { callHost, startHostProcesses, type HostProcess } from '../helpers/host-process.ts';

const ADMIN = 'admin-token-for-storm-processes-0123456789ab';
const UNKNOWN = 40;
const PER_SOURCE = 5;
const call = (h: HostProcess, method: string, route: string, body?: unknown, token = ADMIN) => callHost(h, method, route, token, body);

await mariadbTest(
  'two host processes on one MariaDB: one source opens at most its limit of episodes a minute between them, the rest join one storm',
  async (t) => {
    t.timeout(180_000);
    const [one, two] = (await startHostProcesses(t, 2, {
      SERVICE_ADMIN_TOKEN: ADMIN,
      SERVICE_INGEST_TOKEN: INGEST_TOKEN,
      SERVICE_SECRET_KEY: 'secret-key-shared-by-both-storm-hosts-0123456789',
      SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
      SERVICE_LICENCE_CHECK: 'offline',
      SERVICE_DEBOUNCE_S: '1',
      SERVICE_STORM_PER_SOURCE: String(PER_SOURCE),
    })) as [HostProcess, HostProcess];
    t.is((await call(one, 'POST', '/v1/licence', { licence: signLicence() })).status, 200);
    t.is((await call(one, 'POST', '/v1/auth/bootstrap', { email: 'owner@bank.example', name: 'Owner' })).status, 201);
    t.is((await call(two, 'PUT', '/v1/estate/overrides', { services: { payments: { owner: 'owner@bank.example', tier: 1 } } })).status, 200);

    const pushes = Array.from({ length: UNKNOWN }, (_, i) =>
      call(i % 2 ? two : one, 'POST', '/v1/alerts/generic', { name: 'Down', service: `svc-${i}`, severity: 'warning', id: `svc-${i}` }, INGEST_TOKEN),
    );
    pushes.push(call(one, 'POST', '/v1/alerts/generic', { name: 'PaymentsDown', service: 'payments', severity: 'critical', id: 'pay' }, INGEST_TOKEN));
    for (const r of await Promise.all(pushes)) t.is(r.status, 202);

    const end = Date.now() + 60_000;
    let list: any[] = [];
    for (;;) {
      list = (await call(two, 'GET', '/v1/episodes?limit=200')).body.episodes as any[];
      const storm = list.find((e) => e.kind === 'storm');
      const own = list.filter((e) => e.kind !== 'storm');
      if (own.length + (storm?.storm.alerts ?? 0) >= UNKNOWN + 1) break;
      if (Date.now() > end)
        throw new Error(`not all grouped: ${JSON.stringify(list.map((e) => [e.kind, e.service, e.storm]))}\n${one.output()}\n${two.output()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const storms = list.filter((e) => e.kind === 'storm');
    t.is(storms.length, 1, 'one storm episode for the source');
    t.like(storms[0], { service: 'storm:generic', storm: { source: 'generic', alerts: UNKNOWN - PER_SOURCE, services: UNKNOWN - PER_SOURCE } });
    t.is(list.filter((e) => e.kind !== 'storm' && e.service.startsWith('svc-')).length, PER_SOURCE, 'exactly the limit between both hosts');
    t.is(list.filter((e) => e.service === 'payments').length, 1, 'the service the estate has opened its own');
    t.true((await call(one, 'GET', '/v1/ledger/verify')).body.ok);
  },
);
