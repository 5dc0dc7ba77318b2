// Issue 22, item 3, with two host processes (`node host/main.ts`) on one MariaDB: alerts of new
// names joining one episode through both hosts at once leave exactly one pending approval request,
// every earlier one superseded.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { INGEST_TOKEN, signLicence, testVendor } from '../helpers/app.ts';
import { mariadbTest } from '../helpers/db.ts';
import { fixVendor, JOBS_ESTATE } from '../helpers/fix-vendor.ts';
import { callHost, startHostProcesses, type HostProcess } from '../helpers/host-process.ts';

const HOSTS_ADMIN = 'admin-token-for-supersede-processes-0123456789';
const hostCall = (h: HostProcess, method: string, route: string, body?: unknown, token = HOSTS_ADMIN) => callHost(h, method, route, token, body);

async function until<T>(what: string, fn: () => Promise<T | null | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== null && v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

await mariadbTest('two host processes on one MariaDB: alerts joining through both hosts leave one pending request for the episode', async (t) => {
  t.timeout(180_000);
  const v = fixVendor(t);
  const config = mkdtempSync(path.join(tmpdir(), 'oncall-supersede-config-'));
  t.teardown(() => rmSync(config, { recursive: true, force: true }));
  writeFileSync(path.join(config, 'autonomy.json'), JSON.stringify({ services: { jobs: 'L1' } }));
  const [one, two] = (await startHostProcesses(t, 2, {
    SERVICE_ADMIN_TOKEN: HOSTS_ADMIN,
    SERVICE_INGEST_TOKEN: INGEST_TOKEN,
    SERVICE_SECRET_KEY: 'secret-key-shared-by-both-supersede-hosts-01234',
    SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
    SERVICE_LICENCE_CHECK: 'offline',
    SERVICE_DEBOUNCE_S: '1',
    SERVICE_PLUGINS_DIR: v.dir,
    SERVICE_CONFIG_DIR: config,
  })) as [HostProcess, HostProcess];
  t.is((await hostCall(one, 'POST', '/v1/licence', { licence: signLicence() })).status, 200);
  t.is((await hostCall(one, 'POST', '/v1/auth/bootstrap', { email: 'owner@bank.example', name: 'Owner' })).status, 201);
  t.is((await hostCall(two, 'PUT', '/v1/connectors/fix', { kind: 'fixer', settings: { log: v.log } })).status, 201);
  t.is((await hostCall(one, 'POST', '/v1/people', { email: 'approver@bank.example', name: 'Approver', role: 'viewer' })).status, 201);
  t.is((await hostCall(one, 'PUT', '/v1/estate/overrides', JOBS_ESTATE)).status, 200);
  const alert = (name: string) => ({ name, service: 'jobs', severity: 'critical', id: `jobs-${name}` });
  t.is((await hostCall(one, 'POST', '/v1/alerts/generic', alert('WorkerStuck'), INGEST_TOKEN)).status, 202);
  const pending = async () => ((await hostCall(two, 'GET', '/v1/approvals?state=pending')).body.approvals ?? []) as Array<{ id: string }>;
  await until('the first approval request', async () => ((await pending()).length === 1 ? true : null));
  // Four alerts of new names, two through each host at once: each join starts a run somewhere.
  const pushes = ['QueueBacklog', 'JobsLate', 'DiskSlow', 'CpuHot'].map((n, i) =>
    hostCall(i % 2 ? two : one, 'POST', '/v1/alerts/generic', alert(n), INGEST_TOKEN),
  );
  for (const r of await Promise.all(pushes)) t.is(r.status, 202);
  const settled = await until('every run to have decided', async () => {
    const episodes = (await hostCall(one, 'GET', '/v1/episodes')).body.episodes as any[];
    if (episodes.length !== 1) return null;
    const ep = (await hostCall(one, 'GET', `/v1/episodes/${episodes[0].id}`)).body;
    const open = await pending();
    const lastRun = ep.investigation?.run;
    const runs = ep.timeline.filter((e: any) => e.type === 'decision.diagnosed').length;
    return ep.path_state === 'awaiting_approval' && ep.alerts.length === 5 && runs === lastRun && open.length === 1 && ep.approvals[0]?.id === open[0]!.id
      ? ep
      : null;
  });
  const all = (await hostCall(one, 'GET', '/v1/approvals')).body.approvals as Array<{ id: string; state: string }>;
  t.true(all.length >= 2, 'the joins started at least one new run');
  t.is(all.filter((r) => r.state === 'pending').length, 1, JSON.stringify(all));
  t.is(all.filter((r) => r.state === 'superseded').length, all.length - 1);
  t.is(settled.timeline.filter((e: any) => e.type === 'approval.superseded').length, all.length - 1);
  t.true((await hostCall(two, 'GET', '/v1/ledger/verify')).body.ok);
});
