import test, { type ExecutionContext } from 'ava';
import { MailService, NO_PROVIDER, NO_SEND_YET, SEND_FAILED, type MailDeps } from '../../host/mail/mail.service.ts';
import { SecretCipher } from '../../host/secrets/cipher.ts';
import { SettingsRepo } from '../../host/settings/settings.repo.ts';
import { INGEST_TOKEN, makeOperating, signLicence, startApp, type TestApp } from '../helpers/app.ts';
import { startResendFake, type ResendFake } from '../helpers/resend-fake.ts';
import { deadPort, startSmtp, type TestSmtp } from '../helpers/smtp.ts';

const SMTP_PASSWORD = 'smtp-pass-Zq8!never-shown';
const RESEND_KEY = 're_secret_key_Kx91_never_shown';

interface Setup {
  ta: TestApp;
  smtp: TestSmtp;
  fake: ResendFake;
  /** Every response body the test saw, to check that no secret was ever in one. */
  seen: unknown[];
  call: TestApp['call'];
  /** A second MailService on the same database, as another host process would have. */
  other: (extra?: Pick<MailDeps, 'firstOwner' | 'onCallRecipients'>) => MailService;
}

async function setup(t: ExecutionContext, opts: { trustCa?: boolean; operating?: boolean } = {}): Promise<Setup> {
  const smtp = await startSmtp(t, { user: 'relay-user', password: SMTP_PASSWORD });
  const fake = await startResendFake(t, { key: RESEND_KEY });
  const ta = await startApp(t, { env: { SERVICE_MAIL_CA_FILE: opts.trustCa === false ? undefined : smtp.caFile, SERVICE_MAIL_API_URL: fake.url } });
  if (opts.operating !== false) await makeOperating(ta);
  const seen: unknown[] = [];
  const call: TestApp['call'] = async (method, path, o) => {
    const res = await ta.call(method, path, o);
    seen.push(res.body);
    return res;
  };
  const other = (extra: Pick<MailDeps, 'firstOwner' | 'onCallRecipients'> = {}) =>
    new MailService({
      ...extra,
      settings: new SettingsRepo(ta.app.db),
      cipher: SecretCipher.load(ta.app.config.secretKey, ta.app.config.dataDir),
      ledger: ta.app.ledger,
      clock: ta.clock,
      log: ta.app.log,
      config: ta.app.config,
    });
  return { ta, smtp, fake, seen, call, other };
}

const smtpBody = (s: TestSmtp, extra: Record<string, unknown> = {}) => ({
  smtp_host: s.host,
  smtp_port: s.port,
  smtp_user: 'relay-user',
  smtp_password: SMTP_PASSWORD,
  mail_from: 'oncall@bank.example',
  ...extra,
});

async function events(s: Setup, type: string): Promise<any[]> {
  const res = await s.call('GET', `/v1/ledger?type=${type}&order=asc&limit=2000`);
  return res.body.events;
}

/** No secret in any response, in the ledger, in the logs or in the clear in the database. */
async function assertNoSecrets(t: ExecutionContext, s: Setup): Promise<void> {
  const ledger = await s.ta.call('GET', '/v1/ledger?order=asc&limit=2000');
  const rows = await s.ta.app.db('settings').select('name', 'value');
  const places: Array<[string, string]> = [
    ['responses', JSON.stringify(s.seen)],
    ['ledger', JSON.stringify(ledger.body)],
    ['logs', s.ta.logs.join('\n')],
    ['settings rows', JSON.stringify(rows)],
  ];
  for (const [where, text] of places) {
    t.false(text.includes(SMTP_PASSWORD), `the SMTP password is in the ${where}`);
    t.false(text.includes(RESEND_KEY), `the API key is in the ${where}`);
  }
  t.true((await s.ta.app.verifyLedger()).ok);
}

test('SMTP settings: PUT/GET round trip; smtp_host alone selects SMTP; secrets never returned; a blank secret keeps the stored one', async (t) => {
  const s = await setup(t);
  const empty = await s.call('GET', '/v1/settings/mail');
  t.is(empty.status, 200);
  t.is(empty.body.provider, null);
  t.false(empty.body.resend_key_set);
  t.deepEqual(empty.body.break_glass, { open: true, reason: NO_PROVIDER });

  const put = await s.call('PUT', '/v1/settings/mail', { body: smtpBody(s.smtp) });
  t.is(put.status, 200, JSON.stringify(put.body));
  t.like(put.body, {
    provider: 'smtp',
    smtp_host: '127.0.0.1',
    smtp_port: s.smtp.port,
    smtp_user: 'relay-user',
    smtp_password_set: true,
    smtp_security: 'starttls',
    mail_from: 'oncall@bank.example',
    resend_key_set: false,
  });
  t.false('smtp_password' in put.body);
  const got = await s.call('GET', '/v1/settings/mail');
  t.deepEqual(got.body, put.body);

  // A blank password and an omitted one both keep the stored password: the test send authenticates with it.
  t.is((await s.call('PUT', '/v1/settings/mail', { body: { smtp_password: '' } })).status, 200);
  t.is((await s.call('PUT', '/v1/settings/mail', { body: { smtp_security: 'starttls' } })).body.smtp_password_set, true);
  const sent = await s.call('POST', '/v1/settings/mail/test', { body: { to: 'ops@bank.example' } });
  t.is(sent.status, 200, JSON.stringify(sent.body));
  t.is((await s.smtp.message(0)).user, 'relay-user');

  // Port defaults to 587 on a fresh install; an explicit null clears a plain field.
  const cleared = await s.call('PUT', '/v1/settings/mail', { body: { smtp_user: null, smtp_password: null } });
  t.like(cleared.body, { smtp_user: null, smtp_password_set: false });

  const saved = await events(s, 'config.mail_saved');
  t.is(saved.length, 2, 'the blank and the repeated field changed nothing, so saved nothing');
  t.is(saved[0].actor, 'admin-token');
  t.like(saved[0].data, {
    provider: 'smtp',
    smtp_host: '127.0.0.1',
    smtp_port: s.smtp.port,
    smtp_security: 'starttls',
    mail_from: 'oncall@bank.example',
    smtp_password_set: true,
    resend_key_set: false,
  });
  await assertNoSecrets(t, s);
});

test('concurrent PUTs that change different fields keep every change, also from another host process', async (t) => {
  const s = await setup(t);
  t.is((await s.call('PUT', '/v1/settings/mail', { body: smtpBody(s.smtp) })).status, 200);
  const user = { smtp_user: 'second-user' } as const;
  const from = { mail_from: 'alerts@bank.example' } as const;
  // Where the password goes (security, port) changes only with the password given again.
  const security = { smtp_security: 'ssl', smtp_password: SMTP_PASSWORD } as const;
  const port = { smtp_port: 2525, smtp_password: SMTP_PASSWORD } as const;
  // Each PUT reads the same revision before any of them saves; without the revision check the
  // last save would overwrite the others' fields with what it read.
  const [a, b] = await Promise.all([
    s.call('PUT', '/v1/settings/mail', { body: user }),
    s.call('PUT', '/v1/settings/mail', { body: from }),
    s.other().put(security, { actor: 'person:ops@bank.example' } as Parameters<MailService['put']>[1]),
    s.other().put(port, { actor: 'person:ops@bank.example' } as Parameters<MailService['put']>[1]),
  ]);
  t.deepEqual([a.status, b.status], [200, 200]);
  const got = (await s.call('GET', '/v1/settings/mail')).body;
  t.like(got, { ...user, ...from, smtp_security: 'ssl', smtp_port: 2525, smtp_host: '127.0.0.1', smtp_password_set: true });
  t.is((await events(s, 'config.mail_saved')).length, 5);
  t.true((await s.ta.app.verifyLedger()).ok);
});

test('smtp_host alone selects SMTP over a stored API provider, and the port defaults to 587', async (t) => {
  const s = await setup(t);
  t.is((await s.call('PUT', '/v1/settings/mail', { body: { provider: 'api', resend_key: RESEND_KEY, mail_from: 'oncall@bank.example' } })).status, 200);
  const res = await s.call('PUT', '/v1/settings/mail', { body: { smtp_host: 'relay.bank.example' } });
  t.is(res.status, 200);
  t.like(res.body, {
    provider: 'smtp',
    smtp_host: 'relay.bank.example',
    smtp_port: 587,
    smtp_security: 'starttls',
    resend_key_set: true,
    mail_from: 'oncall@bank.example',
  });
  // And an explicit provider switches back, the stored key kept.
  t.like((await s.call('PUT', '/v1/settings/mail', { body: { provider: 'api' } })).body, {
    provider: 'api',
    resend_key_set: true,
    smtp_host: 'relay.bank.example',
  });
  await assertNoSecrets(t, s);
});

test('API settings: round trip, sender domain must be verified (subdomains count), test send goes through the API', async (t) => {
  const s = await setup(t);
  const put = await s.call('PUT', '/v1/settings/mail', { body: { provider: 'api', resend_key: RESEND_KEY, mail_from: 'oncall@bank.example' } });
  t.is(put.status, 200, JSON.stringify(put.body));
  t.like(put.body, { provider: 'api', resend_key_set: true, mail_from: 'oncall@bank.example', smtp_password_set: false });
  t.deepEqual((await s.call('GET', '/v1/settings/mail')).body, put.body);
  t.true(s.fake.requests.some((r) => r.method === 'GET' && r.path === '/domains' && r.authorization === `Bearer ${RESEND_KEY}`));

  const unverified = await s.call('PUT', '/v1/settings/mail', { body: { mail_from: 'oncall@unverified.example' } });
  t.is(unverified.status, 400);
  t.is(unverified.body.error, 'sender_not_verified');
  const unknown = await s.call('PUT', '/v1/settings/mail', { body: { mail_from: 'oncall@elsewhere.example' } });
  t.is(unknown.body.error, 'sender_not_verified');
  const lookalike = await s.call('PUT', '/v1/settings/mail', { body: { mail_from: 'oncall@notbank.example' } });
  t.is(lookalike.body.error, 'sender_not_verified');
  t.is((await s.call('GET', '/v1/settings/mail')).body.mail_from, 'oncall@bank.example', 'a refused save changes nothing');

  const sub = await s.call('PUT', '/v1/settings/mail', { body: { mail_from: 'alerts@eu.bank.example', resend_key: '' } });
  t.is(sub.status, 200, JSON.stringify(sub.body));
  t.like(sub.body, { mail_from: 'alerts@eu.bank.example', resend_key_set: true });

  // A key the API refuses: the save is refused with the reason, and nothing changes.
  const badKey = await s.call('PUT', '/v1/settings/mail', { body: { resend_key: 're_wrong_key' } });
  t.is(badKey.status, 502);
  t.is(badKey.body.error, 'mail_failed');
  t.regex(badKey.body.message, /refused the API key/);

  const sent = await s.call('POST', '/v1/settings/mail/test', { body: { to: 'ops@bank.example' } });
  t.is(sent.status, 200, JSON.stringify(sent.body));
  t.is(s.fake.sent.length, 1);
  t.like(s.fake.sent[0], { from: 'alerts@eu.bank.example', to: ['ops@bank.example'] });
  t.regex(s.fake.sent[0]!.text, /test e-mail/);
  t.deepEqual(await s.other().breakGlass(), { open: false, reason: null });

  // The API failing: 502 with the reason, and break-glass opens.
  s.fake.fail({ status: 500, message: 'internal trouble' });
  const failed = await s.call('POST', '/v1/settings/mail/test', { body: { to: 'ops@bank.example' } });
  t.is(failed.status, 502);
  t.is(failed.body.error, 'mail_failed');
  t.regex(failed.body.message, /HTTP 500/);
  t.true((await s.other().breakGlass()).open);
  await assertNoSecrets(t, s);
});

test('bad bodies answer 400 invalid_body and change nothing', async (t) => {
  const s = await setup(t);
  const bad: unknown[] = [
    { provider: 'pigeon' },
    { smtp_port: 0 },
    { smtp_port: 70000 },
    { smtp_port: '587' },
    { smtp_security: 'tls' },
    { mail_from: 'not-an-address' },
    { smtp_host: 'has space' },
    { smtp_host: '' },
    { surprise: true },
    [],
    'not json',
    { provider: 'smtp' }, // no host stored
    { provider: 'api' }, // no key stored
    { mail_from: 'oncall@bank.example' }, // api by default, no key
  ];
  for (const body of bad) {
    const res = await s.call('PUT', '/v1/settings/mail', { body });
    t.is(res.status, 400, JSON.stringify(body));
    t.true(['invalid_body', 'invalid_json'].includes(res.body.error), JSON.stringify(res.body));
  }
  t.is((await s.call('GET', '/v1/settings/mail')).body.provider, null);
  t.is((await events(s, 'config.mail_saved')).length, 0);
  // The test send: `to`, when given, must be an address, and nothing else is accepted.
  await s.call('PUT', '/v1/settings/mail', { body: smtpBody(s.smtp) });
  for (const body of [{ to: 'nobody' }, { to: 'a@b.example', extra: 1 }]) {
    const res = await s.call('POST', '/v1/settings/mail/test', { body });
    t.is(res.status, 400, JSON.stringify(body));
  }
  t.is(s.smtp.messages.length, 0);
});

test('roles: GET needs a token (viewer), PUT and test need admin; other tokens are refused', async (t) => {
  // Only the admin token (owner) exists until sign-in arrives; viewer/admin sessions are tested with it.
  const s = await setup(t);
  for (const token of [null, INGEST_TOKEN, 'wrong-token']) {
    t.is((await s.call('GET', '/v1/settings/mail', { token })).status, 401);
    t.is((await s.call('PUT', '/v1/settings/mail', { token, body: smtpBody(s.smtp) })).status, 401);
    t.is((await s.call('POST', '/v1/settings/mail/test', { token, body: { to: 'ops@bank.example' } })).status, 401);
  }
  t.is((await s.call('GET', '/v1/settings/mail')).status, 200);
  t.is((await s.call('GET', '/v1/settings/mail')).body.provider, null);
  t.is(s.smtp.messages.length, 0);
});

test('a test send arrives at the SMTP server over STARTTLS, is recorded, and closes break-glass', async (t) => {
  const s = await setup(t);
  await s.call('PUT', '/v1/settings/mail', { body: smtpBody(s.smtp) });
  t.deepEqual(await s.other().breakGlass(), { open: true, reason: NO_SEND_YET });
  const res = await s.call('POST', '/v1/settings/mail/test', { body: { to: 'ops@bank.example' } });
  t.is(res.status, 200, JSON.stringify(res.body));
  t.deepEqual(res.body, { ok: true, to: 'ops@bank.example', recipients: ['ops@bank.example'], provider: 'smtp' });
  const m = await s.smtp.message(0);
  t.is(m.from, 'oncall@bank.example');
  t.deepEqual(m.to, ['ops@bank.example']);
  t.regex(m.subject, /Test e-mail/);
  t.regex(m.text, /sent at the request of admin-token/);
  t.regex(m.raw, /^Subject: Test e-mail/m);

  const tested = await events(s, 'config.mail_tested');
  t.is(tested.length, 1);
  t.is(tested[0].actor, 'admin-token');
  t.deepEqual(tested[0].data, { ok: true, to: 'ops@bank.example', provider: 'smtp' });

  t.deepEqual(await s.other().breakGlass(), { open: false, reason: null });
  const view = (await s.call('GET', '/v1/settings/mail')).body;
  t.deepEqual(view.break_glass, { open: false, reason: null });
  t.like(view.last_send, { ok: true, reason: null });

  // send() as sign-in will call it: a code arrives and can be read from the text.
  const sent = await s.other().send('someone@bank.example', 'Your sign-in code', 'Your code is 123456.');
  t.deepEqual(sent, { ok: true });
  t.regex((await s.smtp.message(1)).text, /\b(\d{6})\b/);
  await assertNoSecrets(t, s);
});

test('refused and unreachable servers: 502 mail_failed saying why, break-glass opens; a success closes it; a save reopens it', async (t) => {
  const s = await setup(t);
  const mail = s.other();
  await s.call('PUT', '/v1/settings/mail', { body: smtpBody(s.smtp) });

  s.smtp.refuse('rcpt');
  const rcpt = await s.call('POST', '/v1/settings/mail/test', { body: { to: 'ops@bank.example' } });
  t.is(rcpt.status, 502);
  t.is(rcpt.body.error, 'mail_failed');
  t.regex(rcpt.body.message, /refused: .*550/);
  const open = await mail.breakGlass();
  t.true(open.open);
  t.regex(open.reason!, /^refused: /);
  const failedEvent = (await events(s, 'config.mail_tested'))[0];
  t.like(failedEvent.data, { ok: false, to: 'ops@bank.example' });
  t.regex(failedEvent.data.reason, /^refused: /);

  s.smtp.refuse('auth');
  const auth = await mail.send('ops@bank.example', 'x', 'y');
  t.false(auth.ok);
  t.regex((auth as { reason: string }).reason, /^refused: authentication failed/);
  t.deepEqual(await mail.breakGlass(), { open: true, reason: (auth as { reason: string }).reason });

  s.smtp.refuse(null);
  t.deepEqual(await mail.send('ops@bank.example', 'x', 'y'), { ok: true });
  t.deepEqual(await mail.breakGlass(), { open: false, reason: null });

  // A PUT that changes nothing (an empty body, or what GET answered) saves nothing: the success still counts.
  await s.call('PUT', '/v1/settings/mail', { body: {} });
  await s.call('PUT', '/v1/settings/mail', { body: (await s.call('GET', '/v1/settings/mail')).body });
  t.deepEqual(await mail.breakGlass(), { open: false, reason: null });
  // Saving changed settings reopens it until a send succeeds.
  t.is((await s.call('PUT', '/v1/settings/mail', { body: { mail_from: 'alerts@bank.example' } })).status, 200);
  t.deepEqual(await mail.breakGlass(), { open: true, reason: NO_SEND_YET });

  // Nothing listening: unreachable.
  await s.call('PUT', '/v1/settings/mail', { body: { smtp_port: await deadPort(), smtp_password: SMTP_PASSWORD } });
  const dead = await s.call('POST', '/v1/settings/mail/test', { body: { to: 'ops@bank.example' } });
  t.is(dead.status, 502);
  t.regex(dead.body.message, /unreachable: /);
  t.regex((await mail.breakGlass()).reason!, /^unreachable: /);
  await assertNoSecrets(t, s);
});

test('certificate verification stays on: without the CA file the self-signed relay is refused', async (t) => {
  const s = await setup(t, { trustCa: false });
  await s.call('PUT', '/v1/settings/mail', { body: smtpBody(s.smtp) });
  const res = await s.call('POST', '/v1/settings/mail/test', { body: { to: 'ops@bank.example' } });
  t.is(res.status, 502);
  t.is(res.body.error, 'mail_failed');
  t.regex(res.body.message, /unreachable: .*certificate.*SERVICE_MAIL_CA_FILE/i);
  t.is(s.smtp.messages.length, 0);
  await assertNoSecrets(t, s);
});

test('send() never throws: with no provider it says so and break-glass is open', async (t) => {
  const s = await setup(t, { operating: false });
  const mail = s.other();
  t.deepEqual(await mail.send('ops@bank.example', 'x', 'y'), { ok: false, reason: NO_PROVIDER });
  t.deepEqual(await mail.breakGlass(), { open: true, reason: NO_PROVIDER });
});

test('mail settings given at bootstrap show as the API provider; break-glass stays open until a send succeeds', async (t) => {
  const s = await setup(t, { operating: false });
  await s.call('POST', '/v1/licence', { body: { licence: signLicence() } });
  const boot = await s.call('POST', '/v1/auth/bootstrap', {
    body: { email: 'owner@bank.example', name: 'Owner', resend_key: RESEND_KEY, mail_from: 'oncall@bank.example' },
  });
  t.is(boot.status, 201);
  const view = (await s.call('GET', '/v1/settings/mail')).body;
  t.like(view, { provider: 'api', resend_key_set: true, mail_from: 'oncall@bank.example', break_glass: { open: true, reason: NO_SEND_YET } });
  const mail = s.other();
  t.deepEqual(await mail.send('owner@bank.example', 'Your code', 'Code 654321'), { ok: true });
  t.is(s.fake.sent[0]!.text, 'Code 654321');
  t.deepEqual(await mail.breakGlass(), { open: false, reason: null });
  await assertNoSecrets(t, s);
});

test('ssl security: TLS from the first byte, CA file trusted; a server that never greets times out instead of hanging', async (t) => {
  const smtp = await startSmtp(t, { secure: true });
  const ta = await startApp(t, { env: { SERVICE_MAIL_CA_FILE: smtp.caFile } });
  await makeOperating(ta);
  const put = await ta.call('PUT', '/v1/settings/mail', {
    body: { smtp_host: smtp.host, smtp_port: smtp.port, smtp_security: 'ssl', mail_from: 'oncall@bank.example' },
  });
  t.like(put.body, { provider: 'smtp', smtp_security: 'ssl', smtp_user: null, smtp_password_set: false });
  const res = await ta.call('POST', '/v1/settings/mail/test', { body: { to: 'ops@bank.example' } });
  t.is(res.status, 200, JSON.stringify(res.body));
  t.deepEqual((await smtp.message(0)).to, ['ops@bank.example']);
  // The same server spoken to as STARTTLS fails, and says so.
  await ta.call('PUT', '/v1/settings/mail', { body: { smtp_security: 'starttls' } });
  const wrong = await ta.call('POST', '/v1/settings/mail/test', { body: { to: 'ops@bank.example' } });
  t.is(wrong.status, 502);
  t.regex(wrong.body.message, /unreachable: timed out/);
});

test('the admin token with no body: the test e-mail goes to the on-call recipients, else to the first owner', async (t) => {
  const s = await setup(t);
  await s.call('PUT', '/v1/settings/mail', { body: smtpBody(s.smtp) });
  for (const body of [undefined, {}]) {
    const res = await s.call('POST', '/v1/settings/mail/test', { body });
    t.is(res.status, 200, JSON.stringify(res.body));
    t.deepEqual(res.body, { ok: true, to: 'owner@bank.example', recipients: ['owner@bank.example'], provider: 'smtp' });
  }
  t.deepEqual((await s.smtp.message(0)).to, ['owner@bank.example']);
  t.deepEqual((await s.smtp.message(1)).to, ['owner@bank.example']);
  t.deepEqual(
    (await events(s, 'config.mail_tested')).map((e) => [e.actor, e.data.to]),
    [
      ['admin-token', 'owner@bank.example'],
      ['admin-token', 'owner@bank.example'],
    ],
  );

  // The seam the notifications settings fill: their recipients come before the first owner.
  const admin = { kind: 'admin_token', actor: 'admin-token', role: 'owner', email: null } as const;
  const firstOwner = async () => 'owner@bank.example';
  t.deepEqual(await s.other({ firstOwner }).testRecipients(admin), ['owner@bank.example']);
  const mail = s.other({ firstOwner, onCallRecipients: async () => ['Oncall-A@bank.example', 'oncall-b@bank.example', 'oncall-a@bank.example'] });
  t.deepEqual(await mail.testRecipients(admin), ['oncall-a@bank.example', 'oncall-b@bank.example']);
  const res = await mail.test(admin);
  t.deepEqual(res, {
    ok: true,
    to: 'oncall-a@bank.example, oncall-b@bank.example',
    recipients: ['oncall-a@bank.example', 'oncall-b@bank.example'],
    provider: 'smtp',
  });
  t.deepEqual((await s.smtp.message(2)).to, ['oncall-a@bank.example']);
  t.deepEqual((await s.smtp.message(3)).to, ['oncall-b@bank.example']);
  // A person signed in gets it themselves; nobody at all is a 400.
  t.deepEqual(await mail.testRecipients({ kind: 'session', actor: 'ada@bank.example', role: 'admin', email: 'ada@bank.example' } as never), [
    'ada@bank.example',
  ]);
  const nobody = s.other();
  await t.throwsAsync(nobody.test(admin), { message: /no one to send a test e-mail to/ });
  await assertNoSecrets(t, s);
});

test('SMTP given at bootstrap: stored sealed, the status says whether e-mailed codes work (off, untested, working, failing)', async (t) => {
  const s = await setup(t, { operating: false });
  t.is((await s.call('GET', '/v1/status')).body.auth.email_codes, 'off');
  await s.call('POST', '/v1/licence', { body: { licence: signLicence() } });
  // Bad SMTP at bootstrap: 400 and nobody is created.
  for (const body of [
    { smtp_port: 25 },
    { provider: 'smtp' },
    { smtp_host: 'relay', resend_key: 'x' },
    { provider: 'api', smtp_host: 'relay' },
    { smtp_host: 'bad host' },
    { smtp_host: 'relay', smtp_security: 'tls' },
  ]) {
    const res = await s.call('POST', '/v1/auth/bootstrap', { body: { email: 'owner@bank.example', name: 'Owner', ...body } });
    t.is(res.status, 400, JSON.stringify(body));
  }
  t.is((await s.call('GET', '/v1/status')).body.setup.next, 'owner');
  const boot = await s.call('POST', '/v1/auth/bootstrap', { body: { email: 'owner@bank.example', name: 'Owner', ...smtpBody(s.smtp) } });
  t.is(boot.status, 201, JSON.stringify(boot.body));
  const view = (await s.call('GET', '/v1/settings/mail')).body;
  t.like(view, {
    provider: 'smtp',
    smtp_host: s.smtp.host,
    smtp_port: s.smtp.port,
    smtp_user: 'relay-user',
    smtp_password_set: true,
    smtp_security: 'starttls',
    mail_from: 'oncall@bank.example',
    resend_key_set: false,
  });
  const saved = await events(s, 'config.mail_saved');
  t.deepEqual(saved[0].data, {
    provider: 'smtp',
    mail_from: 'oncall@bank.example',
    smtp_host: s.smtp.host,
    smtp_port: s.smtp.port,
    smtp_security: 'starttls',
    smtp_user: 'relay-user',
    smtp_password_set: true,
  });
  let status = (await s.call('GET', '/v1/status')).body;
  t.is(status.auth.email_codes, 'untested');
  t.true(status.auth.break_glass.open);

  // The owner asks for a code: it arrives through the relay, and codes are now known to work.
  t.is((await s.call('POST', '/v1/auth/request', { token: null, body: { email: 'owner@bank.example' } })).status, 202);
  await s.ta.app.signIn.idle();
  t.regex((await s.smtp.message(0)).text, /sign-in code is \d{6}/);
  status = (await s.call('GET', '/v1/status')).body;
  t.is(status.auth.email_codes, 'working');
  t.false(status.auth.break_glass.open);

  // The relay starts refusing: the next code fails, and the status says so.
  s.smtp.refuse('rcpt');
  await s.call('POST', '/v1/auth/request', { token: null, body: { email: 'owner@bank.example' } });
  await s.ta.app.signIn.idle();
  status = (await s.call('GET', '/v1/status')).body;
  t.is(status.auth.email_codes, 'failing');
  // The public status never says why (the reason names the address the code went to).
  t.deepEqual(status.auth.break_glass, { open: true, reason: SEND_FAILED });
  t.false(JSON.stringify(status).includes('owner@bank.example'));
  t.regex((await s.call('GET', '/v1/settings/mail')).body.break_glass.reason, /refused/, 'people signed in see the reason');
  t.false(JSON.stringify(status).includes('relay-user'));
  await assertNoSecrets(t, s);
});
