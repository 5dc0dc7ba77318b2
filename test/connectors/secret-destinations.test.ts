import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';

/**
 * Issue 22, item 4: a stored secret is only ever sent where it was entered for. An update that
 * changes where a connector (or the SMTP relay) sends its requests, with the secret left blank,
 * is refused with 400 `secret_required` naming the secret, and nothing is saved or sent.
 */

/** A server that records every request it gets: the address an insider would re-point a connector at. */
async function listener(t: ExecutionContext): Promise<{ base: string; host: string; port: number; hits: string[] }> {
  const hits: string[] = [];
  const srv = createServer((req, res) => {
    hits.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
    // Two statements: restify (loaded by the app in this process) replaces http.ServerResponse's
    // writeHead with one that returns undefined, so writeHead(...).end() throws once it is loaded.
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))));
  const port = (srv.address() as AddressInfo).port;
  return { base: `http://127.0.0.1:${port}`, host: '127.0.0.1', port, hits };
}

async function operating(t: ExecutionContext): Promise<TestApp> {
  const ta = await startApp(t);
  await makeOperating(ta);
  return ta;
}

interface Case {
  kind: string;
  /** The secret field, as the error names it. */
  secret: string;
  /** Settings with the secret, pointing at `base`. */
  settings(base: string): Record<string, unknown>;
  /** The field that says where requests go. */
  destination: string;
  /** A change of a field that does not move the secret. */
  harmless: Record<string, unknown>;
}

const CASES: Case[] = [
  {
    kind: 'prometheus',
    secret: 'password',
    destination: 'url',
    settings: (base) => ({ url: `${base}/prom`, username: 'reader', password: 'prom-basic-pass-71' }),
    harmless: { timeout_s: 3 },
  },
  {
    kind: 'alertmanager',
    secret: 'password',
    destination: 'url',
    settings: (base) => ({ url: `${base}/am`, username: 'reader', password: 'am-basic-pass-72' }),
    harmless: { poll_s: 120 },
  },
  {
    kind: 'http',
    secret: 'bearer_token',
    destination: 'base_url',
    settings: (base) => ({ base_url: `${base}/api`, bearer_token: 'http-bearer-73' }),
    harmless: { health_path: '/healthz' },
  },
  {
    kind: 'git',
    secret: 'token',
    destination: 'url',
    settings: (base) => ({ url: `${base}/repo.git`, token: 'git-token-74' }),
    harmless: { branch: 'main' },
  },
  {
    kind: 'pagerduty',
    secret: 'routing_key',
    destination: 'url',
    settings: (base) => ({ url: `${base}/v2/enqueue`, routing_key: 'R0UT1NGKEY0123456789abcd' }),
    harmless: { timeout_s: 4 },
  },
  {
    kind: 'webhook',
    secret: 'secret',
    destination: 'url',
    settings: (base) => ({ url: `${base}/hooks/oncall`, secret: 'webhook-shared-secret-75' }),
    harmless: { timeout_s: 4 },
  },
];

const without = (o: Record<string, unknown>, key: string): Record<string, unknown> => Object.fromEntries(Object.entries(o).filter(([k]) => k !== key));

for (const c of CASES) {
  test(`${/^[aeiou]/.test(c.kind) ? 'an' : 'a'} ${c.kind} connector re-pointed with its ${c.secret} left blank is refused naming it, and the secret goes nowhere`, async (t) => {
    const ta = await operating(t);
    const home = await listener(t);
    const elsewhere = await listener(t);
    const first = c.settings(home.base);
    t.is((await ta.call('PUT', '/v1/connectors/target', { body: { kind: c.kind, settings: first } })).status, 201);
    const savedBefore = (await ta.call('GET', '/v1/ledger?type=config.connector_saved')).body.events.length;

    // Re-pointed, the secret omitted, blank or sent back masked: refused, nothing saved.
    const moved = { ...without(first, c.secret), [c.destination]: c.settings(elsewhere.base)[c.destination] };
    for (const blank of [undefined, '', { set: true }]) {
      const settings = blank === undefined ? moved : { ...moved, [c.secret]: blank };
      const res = await ta.call('PUT', '/v1/connectors/target', { body: { kind: c.kind, settings } });
      t.is(res.status, 400, JSON.stringify(res.body));
      t.is(res.body.error, 'secret_required');
      t.regex(res.body.message, new RegExp(`^settings\\.${c.secret} must be given again: settings\\.${c.destination} changed`));
      // Nor may a test with the saved connector's name carry the stored secret to the new address.
      const tested = await ta.call('POST', '/v1/connectors/test', { body: { kind: c.kind, name: 'target', settings } });
      t.is(tested.status, 400);
      t.is(tested.body.error, 'secret_required');
    }
    t.deepEqual(elsewhere.hits, [], 'nothing was sent to the new address');
    const kept = (await ta.call('GET', '/v1/connectors/target')).body;
    t.is(kept.settings[c.destination], first[c.destination], 'the stored settings are unchanged');
    t.is((await ta.call('GET', '/v1/ledger?type=config.connector_saved')).body.events.length, savedBefore);

    // A change elsewhere keeps the stored secret, as before.
    const harmless = await ta.call('PUT', '/v1/connectors/target', { body: { kind: c.kind, settings: { ...without(first, c.secret), ...c.harmless } } });
    t.is(harmless.status, 200, JSON.stringify(harmless.body));
    t.deepEqual(harmless.body.settings[c.secret], { set: true });

    // Re-pointed with the secret entered again: saved.
    const entered = await ta.call('PUT', '/v1/connectors/target', { body: { kind: c.kind, settings: c.settings(elsewhere.base) } });
    t.is(entered.status, 200, JSON.stringify(entered.body));
    t.is(entered.body.settings[c.destination], c.settings(elsewhere.base)[c.destination]);
    t.deepEqual(entered.body.settings[c.secret], { set: true });
    t.true((await ta.app.verifyLedger()).ok);
  });
}

test('the http connector runbook token is bound to base_url too, and a null secret may still be cleared while re-pointing', async (t) => {
  const ta = await operating(t);
  const home = await listener(t);
  const elsewhere = await listener(t);
  await ta.call('PUT', '/v1/connectors/runbooks', { body: { kind: 'http', settings: { base_url: home.base, runbook_token: 'runbook-token-76' } } });
  const refused = await ta.call('PUT', '/v1/connectors/runbooks', { body: { kind: 'http', settings: { base_url: elsewhere.base } } });
  t.like(refused.body, { error: 'secret_required' });
  t.regex(refused.body.message, /^settings\.runbook_token must be given again/);
  const cleared = await ta.call('PUT', '/v1/connectors/runbooks', { body: { kind: 'http', settings: { base_url: elsewhere.base, runbook_token: null } } });
  t.is(cleared.status, 200);
  t.deepEqual(cleared.body.settings.runbook_token, { set: false });
});

test('a notification target re-pointed with a blank secret is refused, and its notifications still go where they went', async (t) => {
  const ta = await operating(t);
  const home = await listener(t);
  const elsewhere = await listener(t);
  await ta.call('PUT', '/v1/connectors/chat', { body: { kind: 'webhook', settings: { url: `${home.base}/hook`, secret: 'webhook-shared-secret-77' } } });
  t.is((await ta.call('PUT', '/v1/settings/notifications', { body: { targets: ['chat'] } })).status, 200);
  const refused = await ta.call('PUT', '/v1/connectors/chat', { body: { kind: 'webhook', settings: { url: `${elsewhere.base}/hook` } } });
  t.is(refused.status, 400);
  t.is(refused.body.error, 'secret_required');
  t.is((await ta.call('GET', '/v1/connectors/chat')).body.settings.url, `${home.base}/hook`);
});

test('the SMTP password is kept only while host, port and security stay; re-pointing needs it again', async (t) => {
  const ta = await operating(t);
  const relay = {
    smtp_host: 'relay.bank.example',
    smtp_port: 587,
    smtp_user: 'relay-user',
    smtp_password: 'smtp-pass-never-moves-78',
    smtp_security: 'starttls',
  };
  t.is((await ta.call('PUT', '/v1/settings/mail', { body: relay })).status, 200);
  const before = (await ta.call('GET', '/v1/settings/mail')).body;
  for (const [field, value] of [
    ['smtp_host', 'mx.attacker.example'],
    ['smtp_port', 2525],
    ['smtp_security', 'none'],
  ] as const) {
    for (const blank of [undefined, '']) {
      const body: Record<string, unknown> = { [field]: value };
      if (blank !== undefined) body.smtp_password = blank;
      const res = await ta.call('PUT', '/v1/settings/mail', { body });
      t.is(res.status, 400, `${field}: ${JSON.stringify(res.body)}`);
      t.is(res.body.error, 'secret_required');
      t.regex(res.body.message, new RegExp(`^smtp_password must be given again: ${field} changed`));
    }
  }
  t.deepEqual((await ta.call('GET', '/v1/settings/mail')).body, before, 'nothing was saved');
  // The user or the sender may change without it; the host with it.
  t.is((await ta.call('PUT', '/v1/settings/mail', { body: { smtp_user: 'other-user', mail_from: 'oncall@bank.example' } })).status, 200);
  const moved = await ta.call('PUT', '/v1/settings/mail', { body: { smtp_host: 'relay2.bank.example', smtp_password: 'smtp-pass-for-relay2-79' } });
  t.is(moved.status, 200, JSON.stringify(moved.body));
  t.like(moved.body, { smtp_host: 'relay2.bank.example', smtp_password_set: true });
  t.is((await ta.call('GET', '/v1/ledger?type=config.mail_saved')).body.events.length, 3);
});
