// Issue 22, item 9 with two host processes on one MariaDB (each has its own scrypt queue): the
// hammering spread over both, a valid sign-in still goes next. Always on MariaDB.
import { signLicence, testVendor } from '../helpers/app.ts';
import { mariadbTest } from '../helpers/db.ts';
import { startHostProcesses } from '../helpers/host-process.ts';
import { hammer, hostNeeds } from '../helpers/sign-in-queue.ts';

await mariadbTest('two host processes on one MariaDB: the hammering is spread over both, and a valid sign-in still goes next', async (t) => {
  t.timeout(170_000);
  const ADMIN = 'admin-token-for-sign-in-queue-0123456789abcdef';
  const hosts = await startHostProcesses(t, 2, {
    SERVICE_ADMIN_TOKEN: ADMIN,
    SERVICE_SECRET_KEY: 'secret-key-shared-by-both-hosts-0123456789',
    SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
    SERVICE_TRUSTED_PROXIES: '127.0.0.1,::1',
  });
  const post = (path: string, body: unknown) =>
    fetch(hosts[0]!.base + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  t.is((await post('/v1/licence', { licence: signLicence() })).status, 200);
  t.is((await post('/v1/auth/bootstrap', { email: 'owner@bank.example', name: 'First Owner' })).status, 201);
  const password = await hostNeeds.password(hosts[0]!.base, ADMIN);
  const r = await hammer(
    hosts.map((h) => h.base),
    hostNeeds.EMAIL,
    password,
  );
  t.log(`while the valid sign-in waited, ${r.ahead} wrong passwords were answered (both hosts); ${JSON.stringify(r.statuses)}`);
  t.is(r.valid, 200);
  t.true((r.statuses['503'] ?? 0) > 0);
  // Each host checks two at once: answered before it are at most the four under way on both and,
  // on MySQL, the four just derived whose failure is still being recorded (the ledger's chain
  // head is shared by both hosts), never the queue behind them (24 per host).
  t.true(r.ahead <= 8, `${r.ahead} wrong passwords were answered while the valid sign-in waited`);
});
