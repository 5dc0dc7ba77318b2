import type { ExecutionContext } from 'ava';
import { signLicence, testVendor } from '../helpers/app.ts';
import { mariadbTest } from '../helpers/db.ts';
import { startHostProcesses, type HostProcess } from '../helpers/host-process.ts';
import { startSmtp } from '../helpers/smtp.ts';

/*
 * Two host processes (`node host/main.ts`) on one MariaDB database, both scheduled (node-cron,
 * real time) to send the daily digest at the same minute: the day's lease lets exactly one send
 * it, to the owner and the admin, and one config.digest_sent is recorded.
 */

const ADMIN_TOKEN = 'admin-token-for-digest-processes-0123456789';
/** Time for both hosts to start and be set up before the minute they send at. */
const LEAD_MS = 90_000;

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

await mariadbTest('two host processes on one MariaDB, both due to send the daily digest at the same minute: it goes out once', async (t) => {
  t.timeout(300_000);
  const smtp = await startSmtp(t);
  const due = new Date(Math.ceil((Date.now() + LEAD_MS) / 60_000) * 60_000);
  const at = `${String(due.getUTCHours()).padStart(2, '0')}:${String(due.getUTCMinutes()).padStart(2, '0')}`;
  const hosts = await startHostProcesses(t, 2, {
    SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
    SERVICE_SECRET_KEY: 'secret-key-shared-by-both-digest-hosts-012345',
    SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
    SERVICE_LICENCE_CHECK: 'offline',
    SERVICE_MAIL_CA_FILE: smtp.caFile,
    SERVICE_DIGEST_AT: at,
    SERVICE_TIME_ZONE: 'UTC',
  });
  const [one, two] = hosts as [HostProcess, HostProcess];
  must(t, await call(one, 'POST', '/v1/licence', { licence: signLicence() }), 200, 'licence');
  must(t, await call(one, 'POST', '/v1/auth/bootstrap', { email: 'owner@bank.example', name: 'Owner' }), 201, 'bootstrap');
  must(t, await call(two, 'POST', '/v1/people', { email: 'admin@bank.example', name: 'Admin', role: 'admin' }), 201, 'admin');
  must(t, await call(two, 'POST', '/v1/people', { email: 'viewer@bank.example', name: 'Viewer', role: 'viewer' }), 201, 'viewer');
  must(t, await call(one, 'PUT', '/v1/settings/mail', { smtp_host: smtp.host, smtp_port: smtp.port, mail_from: 'oncall@bank.example' }), 200, 'mail');
  if (Date.now() > due.getTime() - 5_000) t.fail(`the hosts took too long to start: the digest was due at ${due.toISOString()}`);

  const digests = () => smtp.messages.filter((m) => m.subject.startsWith('On-call digest for '));
  const deadline = due.getTime() + 60_000;
  while (digests().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
  // Long enough for a second send, had there been one.
  await new Promise((r) => setTimeout(r, 5_000));
  t.deepEqual(
    digests()
      .map((m) => m.to)
      .flat()
      .sort(),
    ['admin@bank.example', 'owner@bank.example'],
    `${one.output()}\n${two.output()}`,
  );
  const sent = (await call(two, 'GET', '/v1/ledger?type=config.digest_sent')).body.events as any[];
  t.is(sent.length, 1);
  t.like(sent[0].data, { day: due.toISOString().slice(0, 10), recipients: 2 });
  t.true((await call(one, 'GET', '/v1/ledger/verify')).body.ok);
});
