import type { ExecutionContext } from 'ava';
import { INGEST_TOKEN, signLicence, testVendor } from '../helpers/app.ts';
import { mariadbTest } from '../helpers/db.ts';
import { startHostProcesses, type HostProcess } from '../helpers/host-process.ts';

/*
 * Two host processes (`node host/main.ts`) on one MariaDB database: racing adds spread over both
 * never pass the licence's limit, and a link added on one host places alerts pushed to the other
 * (the estate's version check in the database), with no restart.
 */

const ADMIN_TOKEN = 'admin-token-for-estate-processes-0123456789';

async function call(h: HostProcess, method: string, route: string, opts: { token?: string; body?: unknown } = {}): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${opts.token ?? ADMIN_TOKEN}` };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(h.base + route, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : JSON.parse(text) };
}

function must(t: ExecutionContext, res: { status: number; body: unknown }, status: number, what: string): void {
  if (res.status !== status) t.fail(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
}

await mariadbTest(
  'two host processes on one MariaDB: the licence limit holds under racing adds on both, and a link made on one places alerts on the other',
  async (t) => {
    t.timeout(120_000);
    const hosts = await startHostProcesses(t, 2, {
      SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
      SERVICE_INGEST_TOKEN: INGEST_TOKEN,
      SERVICE_SECRET_KEY: 'secret-key-shared-by-both-estate-hosts-012345',
      SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
      SERVICE_LICENCE_CHECK: 'offline',
    });
    const [one, two] = hosts as [HostProcess, HostProcess];
    must(t, await call(one, 'POST', '/v1/licence', { body: { licence: signLicence({ tier: 'starter', services: 5 }) } }), 200, 'licence');
    must(t, await call(one, 'POST', '/v1/auth/bootstrap', { body: { email: 'owner@bank.example', name: 'Owner' } }), 201, 'bootstrap');

    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => call(hosts[i % 2]!, 'PUT', '/v1/estate/overrides', { body: { services: { [`svc-${i}`]: { tier: 3 } } } })),
    );
    const tally = answers.reduce<Record<number, number>>((a, r) => ({ ...a, [r.status]: (a[r.status] ?? 0) + 1 }), {});
    t.deepEqual(tally, { 200: 5, 409: 7 }, JSON.stringify(answers.filter((a) => a.status !== 200 && a.status !== 409)));
    for (const r of answers.filter((a) => a.status === 409)) t.is(r.body.error, 'licence_limit');
    t.is((await call(two, 'GET', '/v1/estate')).body.services.length, 5);
    const added = Object.keys((await call(one, 'GET', '/v1/estate/overrides')).body.services);

    // Host two places with its own index; host one adds a link; two sees it within a second.
    const push = (id: string) =>
      call(two, 'POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name: 'QueueStuck', severity: 'warning', id, labels: { queue: 'orders' } } });
    must(t, await push('before'), 202, 'push before');
    t.deepEqual(
      (await call(two, 'GET', '/v1/estate')).body.unplaced.map((u: any) => u.name),
      ['QueueStuck'],
    );
    const o = (await call(one, 'GET', '/v1/estate/overrides')).body;
    must(
      t,
      await call(one, 'PUT', '/v1/estate/overrides', {
        body: { version: o.version, services: { [added[0]!]: { tier: 3, links: [{ kind: 'alert', match: 'queue="orders"' }] } } },
      }),
      200,
      'link',
    );
    // Reading the estate on host two reads the version now (no waiting out FRESH_MS, which
    // test/estate/estate.test.ts checks on the injected clock); the push then uses the rebuilt index.
    t.true((await call(two, 'GET', '/v1/estate')).body.services.some((s: any) => s.links.some((l: any) => l.match === 'queue="orders"')));
    must(t, await push('after'), 202, 'push after');
    const estate = (await call(two, 'GET', '/v1/estate')).body;
    t.deepEqual(
      estate.unplaced.map((u: any) => [u.name, u.count]),
      [['QueueStuck', 1]],
      'the second alert was placed, the first stays where it was',
    );
    t.true((await call(one, 'GET', '/v1/ledger/verify')).body.ok);
  },
);
