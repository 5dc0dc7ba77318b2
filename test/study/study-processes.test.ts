import type { ExecutionContext } from 'ava';
import { signLicence, testVendor } from '../helpers/app.ts';
import { waitFor } from '../helpers/alertmanager.ts';
import { mariadbTest } from '../helpers/db.ts';
import { startHostProcesses, type HostProcess } from '../helpers/host-process.ts';

/*
 * Two host processes (`node host/main.ts`) on one MariaDB database: of starts racing on both,
 * exactly one study is accepted; the other host sees it running, stops it, and it finishes.
 */

const ADMIN_TOKEN = 'admin-token-for-study-processes-0123456789';

async function call(h: HostProcess, method: string, route: string, body?: unknown): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(h.base + route, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : JSON.parse(text) };
}

function must(t: ExecutionContext, res: { status: number; body: unknown }, status: number, what: string): void {
  if (res.status !== status) t.fail(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
}

await mariadbTest('two host processes on one MariaDB: of racing study starts on both exactly one is accepted, and either host can stop it', async (t) => {
  t.timeout(120_000);
  const hosts = await startHostProcesses(t, 2, {
    SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
    SERVICE_SECRET_KEY: 'secret-key-shared-by-both-study-hosts-0123456',
    SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
    SERVICE_LICENCE_CHECK: 'offline',
  });
  const [one, two] = hosts as [HostProcess, HostProcess];
  must(t, await call(one, 'POST', '/v1/licence', { licence: signLicence() }), 200, 'licence');
  must(t, await call(one, 'POST', '/v1/auth/bootstrap', { email: 'owner@bank.example', name: 'Owner' }), 201, 'bootstrap');
  const put = await call(one, 'PUT', '/v1/estate/overrides', { services: { a: { tier: 2 }, b: { tier: 3 }, c: { tier: 4 } } });
  t.true(put.status === 200 || put.status === 201, JSON.stringify(put.body));

  const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => call(hosts[i % 2]!, 'POST', '/v1/study', { minutes: 5 })));
  const tally = answers.reduce<Record<number, number>>((a, r) => ({ ...a, [r.status]: (a[r.status] ?? 0) + 1 }), {});
  t.deepEqual(tally, { 202: 1, 409: 7 }, JSON.stringify(answers.filter((a) => a.status !== 202 && a.status !== 409)));
  for (const r of answers.filter((a) => a.status === 409)) t.is(r.body.error, 'study_running');

  // The host that did not start it sees it, and stops it; the host running it finishes it cut short.
  const runner = answers.findIndex((a) => a.status === 202) % 2 === 0 ? one : two;
  const other = runner === one ? two : one;
  t.like((await call(other, 'GET', '/v1/study')).body, { state: 'running' });
  must(t, await call(other, 'POST', '/v1/study/stop'), 200, 'stop');
  const done = await waitFor(
    'the study to finish',
    async () => {
      const s = (await call(runner, 'GET', '/v1/study')).body;
      return s.state === 'finished' ? s : null;
    },
    30_000,
    100,
  );
  t.true(done.cut_short);
  t.true(done.progress.done < done.progress.total);
  must(t, await call(two, 'POST', '/v1/study', { minutes: 5 }), 202, 'a new study once the first finished');
  must(t, await call(one, 'POST', '/v1/study/stop'), 200, 'stop the second');
  const verified = await call(one, 'GET', '/v1/ledger/verify');
  t.true(verified.body.ok, JSON.stringify(verified.body));
});
