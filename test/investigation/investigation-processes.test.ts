import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { INGEST_TOKEN, signLicence, testVendor } from '../helpers/app.ts';
import { mariadbTest } from '../helpers/db.ts';
import { startHostProcesses, type HostProcess } from '../helpers/host-process.ts';

/*
 * Two host processes (`node host/main.ts`) on one MariaDB database: every episode is investigated
 * exactly once (the lease on its investigation row), whichever host opened it, with both hosts
 * nudged at once.
 */

const ADMIN_TOKEN = 'admin-token-for-investigation-processes-0123';

async function call(h: HostProcess, method: string, route: string, opts: { token?: string; body?: unknown } = {}): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${opts.token ?? ADMIN_TOKEN}` };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(h.base + route, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : JSON.parse(text) };
}

await mariadbTest('two host processes on one MariaDB investigate each episode once', async (t) => {
  t.timeout(120_000);
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-packs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(path.join(dir, 'slow'));
  writeFileSync(path.join(dir, 'slow', 'plugin.json'), JSON.stringify({ name: 'slow', version: '1.0.0', kind: 'pack', api: '^1.1.0', entry: 'index.mjs' }));
  writeFileSync(
    path.join(dir, 'slow', 'index.mjs'),
    `export default { causes: [{ id: 'slow/wait', title: 'Slow', specificity: 10, applies: { always: true }, reads: [],
      check: async () => { await new Promise((r) => setTimeout(r, 300)); return { verdict: 'ruled_out', reason: 'waited', evidence: [{ source: 'signals', kind: 'x', query: 'q', at: new Date().toISOString(), observed: 1, excerpt: 'e' }] }; } }] };`,
  );
  const hosts = await startHostProcesses(t, 2, {
    SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
    SERVICE_INGEST_TOKEN: INGEST_TOKEN,
    SERVICE_SECRET_KEY: 'secret-key-shared-by-both-investigation-hosts',
    SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
    SERVICE_LICENCE_CHECK: 'offline',
    SERVICE_DEBOUNCE_S: '1',
    SERVICE_PLUGINS_DIR: dir,
  });
  const [one] = hosts as [HostProcess, HostProcess];
  t.is((await call(one, 'POST', '/v1/licence', { body: { licence: signLicence() } })).status, 200);
  t.is((await call(one, 'POST', '/v1/auth/bootstrap', { body: { email: 'owner@bank.example', name: 'Owner' } })).status, 201);
  const services = Array.from({ length: 10 }, (_, i) => `svc-${i}`);
  await Promise.all(
    services.map((s, i) =>
      call(hosts[i % 2]!, 'POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name: 'Down', service: s, severity: 'critical', id: s } }),
    ),
  );
  // Both hosts group and investigate on their own ticks and nudges; wait until all are diagnosed.
  let episodes: any[] = [];
  for (let i = 0; i < 200; i++) {
    episodes = (await call(one, 'GET', '/v1/episodes?limit=50')).body.episodes ?? [];
    const full = await Promise.all(episodes.map((e) => call(hosts[i % 2]!, 'GET', `/v1/episodes/${e.id}`)));
    if (episodes.length === services.length && full.every((f) => f.body.investigation?.state === 'diagnosed')) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  t.is(episodes.length, services.length, 'every service has its episode');
  for (const e of episodes) {
    const full = (await call(one, 'GET', `/v1/episodes/${e.id}`)).body;
    t.is(full.investigation.state, 'diagnosed', e.service);
    const types = full.timeline.map((x: any) => x.type);
    const slow = full.timeline.filter((x: any) => x.type === 'check.finished' && x.data.cause === 'slow/wait');
    t.is(types.filter((x: string) => x === 'retrieval.context').length, 1, `${e.service} retrieved once`);
    t.is(slow.length, 1, `${e.service} checked once`);
    t.is(types.filter((x: string) => x === 'decision.diagnosed').length, 1, `${e.service} diagnosed once`);
    t.is(full.verdicts.filter((v: any) => v.cause === 'slow/wait').length, 1);
  }
  t.true((await call(one, 'GET', '/v1/ledger/verify')).body.ok);
});
