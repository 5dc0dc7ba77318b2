import { signLicence, testVendor } from '../helpers/app.ts';
import { mariadbTest } from '../helpers/db.ts';
import { startHostProcesses, type HostProcess } from '../helpers/host-process.ts';
import { slapdMissing, startSlapd } from '../helpers/slapd.ts';
import { ldapSettings, MAPPINGS } from '../helpers/sso.ts';
import { waitFor } from '../helpers/wait.ts';

/**
 * Two real host processes on one MariaDB database sync the directory once: the tick of each
 * (every 10 s of real time) finds the sync due, and the database lease lets one of them do it;
 * syncs asked for at once on both never overlap, and each accepted one is recorded once.
 */
const ADMIN_TOKEN = 'admin-token-for-sso-processes-0123456789';

async function call(h: HostProcess, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(h.base + path, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

const synced = async (h: HostProcess) =>
  (await call(h, 'GET', '/v1/ledger?type=identity.directory_synced&order=asc&limit=2000')).body.events as Array<{ actor: string; data: any }>;

await mariadbTest('two host processes on one MariaDB: the directory is synced once per interval, and syncs asked for at once never overlap', async (t) => {
  if (slapdMissing !== null) {
    if (process.env.CI === 'true') t.fail(slapdMissing);
    else t.log(`skipped: ${slapdMissing}`);
    return;
  }
  t.timeout(170_000);
  const slapd = await startSlapd(t);
  const hosts = await startHostProcesses(t, 2, {
    SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
    SERVICE_SECRET_KEY: 'secret-key-shared-by-both-hosts-0123456789',
    SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
  });
  const [one, two] = hosts as [HostProcess, HostProcess];
  t.is((await call(one, 'POST', '/v1/licence', { licence: signLicence() })).status, 200);
  t.is((await call(one, 'POST', '/v1/auth/bootstrap', { email: 'owner@bank.example', name: 'Owner' })).status, 201);
  const saved = await call(two, 'PUT', '/v1/settings/sso', { ldap: ldapSettings(slapd), mappings: MAPPINGS });
  t.is(saved.status, 200, JSON.stringify(saved.body));

  // Both ticks find the first sync due within 10 s; one host does it.
  await waitFor('the first sync', async () => (await synced(one)).length > 0, 60_000, 500);
  // Two more ticks of each host: nothing more is due for 15 minutes.
  await new Promise((r) => setTimeout(r, 21_000));
  const ticked = await synced(two);
  t.is(ticked.length, 1, JSON.stringify(ticked.map((e) => e.actor)));
  t.like(ticked[0], { actor: 'system', data: { ok: true } });
  t.is((await call(one, 'GET', '/v1/people')).body.people.length, 7, 'the owner and six directory people, each once');

  // Six syncs asked for at once, three on each host.
  const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => call(hosts[i % 2]!, 'POST', '/v1/settings/sso/sync')));
  const ok = answers.filter((a) => a.status === 200);
  t.true(ok.length >= 1);
  t.true(answers.every((a) => a.status === 200 || (a.status === 409 && a.body.error === 'sync_running')));
  const asked = (await synced(one)).filter((e) => e.actor === 'admin-token');
  t.is(asked.length, ok.length, 'each accepted sync is recorded once');
  t.true(
    asked.every((e) => e.data.ok === true && e.data.added.length === 0),
    'no sync added anyone twice',
  );
});
