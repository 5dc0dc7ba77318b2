// Issue 22, item 8 with two host processes on one MariaDB, each with few descriptors (ulimit -n
// 512): a thousand idle slow-header connections at each, and both still answer /health, a
// password sign-in (which needs the database pool) and the doctor. Always on MariaDB.
import { signLicence, testVendor } from '../helpers/app.ts';
import { mariadbTest } from '../helpers/db.ts';
import { startHostProcesses } from '../helpers/host-process.ts';
import { hostNeeds } from '../helpers/sign-in-queue.ts';
import { slowHeaders } from '../helpers/slow-headers.ts';

const ADMIN = 'admin-token-for-http-connections-0123456789';

await mariadbTest('two host processes with 512 descriptors each: a thousand slow-header connections at each, and both still answer', async (t) => {
  t.timeout(170_000);
  const hosts = await startHostProcesses(
    t,
    2,
    { SERVICE_ADMIN_TOKEN: ADMIN, SERVICE_SECRET_KEY: 'secret-key-shared-by-both-hosts-0123456789', SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem },
    { nofile: 512 },
  );
  const call = (base: string, method: string, p: string, body?: unknown, token: string | null = ADMIN) =>
    fetch(base + p, {
      method,
      headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(20_000),
    });
  t.is((await call(hosts[0]!.base, 'POST', '/v1/licence', { licence: signLicence() })).status, 200);
  t.is((await call(hosts[0]!.base, 'POST', '/v1/auth/bootstrap', { email: 'owner@bank.example', name: 'First Owner' })).status, 201);
  const password = await hostNeeds.password(hosts[0]!.base, ADMIN);
  const attacks = await Promise.all(hosts.map((h) => slowHeaders(Number(new URL(h.base).port), ['127.0.0.2'], 1000)));
  try {
    for (const h of hosts) {
      t.is((await call(h.base, 'GET', '/health', undefined, null)).status, 200, h.name);
      t.is((await call(h.base, 'POST', '/v1/auth/password', { email: hostNeeds.EMAIL, password }, null)).status, 200, `${h.name}: sign-in`);
      const doctor = await call(h.base, 'GET', '/v1/doctor?fresh=1');
      t.is(doctor.status, 200, `${h.name}: doctor`);
      t.false((await doctor.text()).includes('EMFILE'));
    }
  } finally {
    for (const a of attacks) a.stop();
  }
  for (const h of hosts) t.false(h.output().includes('EMFILE'), `${h.name}: ${h.output().slice(-2000)}`);
});
