// The daily digest e-mail (issue 16): to every enabled owner and admin through the mail
// settings (a real SMTP server), once per day under a lease (two hosts on one database), a
// failed send retried once and then shown by the doctor, and never touching break-glass.
import test from 'ava';
import { HOUR, MINUTE } from '../../host/clock.ts';
import { DigestMailer, digestLease } from '../../host/digest/digest-mail.ts';
import { DigestStateRepo } from '../../host/digest/digest-state.repo.ts';
import { createPeople } from '../../host/identity/people.ts';
import { createLogger } from '../../host/log.ts';
import { loadConfig } from '../../host/config.ts';
import { LeaseRepo } from '../../host/schedule/lease.repo.ts';
import { SettingsRepo } from '../../host/settings/settings.repo.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { seedDay, seededApp } from '../helpers/digest-seed.ts';
import type { TestSmtp } from '../helpers/smtp.ts';

const DIGEST_SUBJECT = /^On-call digest for /;
const digests = (smtp: TestSmtp) => smtp.messages.filter((m) => DIGEST_SUBJECT.test(m.subject));
const events = async (ta: TestApp, type: string) => (await ta.call('GET', `/v1/ledger?type=${type}&order=asc`)).body.events as any[];
const doctorDigest = async (ta: TestApp) => ((await ta.call('GET', '/v1/doctor?fresh=1')).body.components as any[]).find((c) => c.name === 'digest');

test('the daily e-mail: the digest to every enabled owner and admin (not viewers), config.digest_sent, once per day', async (t) => {
  const { ta, smtp } = await seededApp(t);
  await seedDay(ta);
  t.like(await doctorDigest(ta), { status: 'ok', detail: 'no digest e-mail sent yet; sent daily at 08:00 Europe/Zurich' });
  // 08:00 in Zurich (summer time) is 06:00 UTC: the day after the seeded one.
  ta.clock.set('2026-06-02T06:00:00.000Z');
  const sent = await ta.app.digest.mailer.sendFor(ta.clock.now());
  t.like(sent, { day: '2026-06-02', sent: true, ok: true, failed: [] });
  t.deepEqual(sent.recipients, ['admin@bank.example', 'owner@bank.example']);
  const mails = digests(smtp);
  t.deepEqual(
    mails
      .map((m) => m.to)
      .flat()
      .sort(),
    ['admin@bank.example', 'owner@bank.example'],
  );
  t.regex(mails[0]!.subject, /^On-call digest for 2026-06-02: 3 episode\(s\) opened, ledger verifies$/);
  t.true(mails[0]!.text.startsWith('# Digest of the last day\n'));
  t.true(mails[0]!.text.includes('- Opened: 3 (mitigated 1, escalated 2)'));
  t.true(mails[0]!.text.includes('\\<img src=x onerror=alert(1)\\>'), 'alert names escaped in the e-mail too');

  const [ev, ...more] = await events(ta, 'config.digest_sent');
  t.deepEqual(more, []);
  t.like(ev, { actor: 'system', data: { day: '2026-06-02', days: 1, recipients: 2, to: ['admin@bank.example', 'owner@bank.example'] } });
  t.like(await doctorDigest(ta), { status: 'ok', fix: null });
  t.regex((await doctorDigest(ta)).detail, /^the digest of 2026-06-02 went to 2 owners and admins at /);

  // Again the same day (another cron beat, a restart): nothing more is sent.
  ta.clock.advance(MINUTE);
  t.like(await ta.app.digest.mailer.sendFor(ta.clock.now()), { day: '2026-06-02', sent: false });
  t.is(digests(smtp).length, 2);
  // The next day sends again.
  ta.clock.advance(24 * HOUR);
  t.like(await ta.app.digest.mailer.sendFor(ta.clock.now()), { day: '2026-06-03', sent: true, ok: true });
  t.is(digests(smtp).length, 4);
  const report = await ta.app.verifyLedger();
  t.true(report.ok, JSON.stringify(report).slice(0, 2000));
});

test('a refused send is retried once, then config.digest_failed, the doctor fails, and break-glass stays closed', async (t) => {
  const { ta, smtp } = await seededApp(t);
  // A working send (a test e-mail) closed break-glass.
  t.is((await ta.call('POST', '/v1/settings/mail/test', { body: { to: 'owner@bank.example' } })).status, 200);
  t.like((await ta.call('GET', '/v1/settings/mail')).body.break_glass, { open: false });
  smtp.refuse('data');
  const out = await ta.app.digest.mailer.sendFor(ta.clock.now());
  t.like(out, { sent: true, ok: false });
  t.deepEqual(
    out.failed!.map((f) => f.to),
    ['admin@bank.example', 'owner@bank.example'],
  );
  t.regex(out.failed![0]!.reason, /554|refused/);
  t.is(ta.logs.filter((l) => l.includes('trying once more')).length, 2, 'each recipient tried twice');
  t.deepEqual(await events(ta, 'config.digest_sent'), []);
  const [failed] = await events(ta, 'config.digest_failed');
  t.like(failed, { actor: 'system', data: { day: '2026-06-01', recipients: 2 } });
  t.is(failed.data.failed.length, 2);
  const doc = await doctorDigest(ta);
  t.is(doc.status, 'fail');
  t.regex(doc.detail, /the digest of 2026-06-01 did not reach admin@bank\.example: .*\(each send is tried twice\)/);
  t.truthy(doc.fix);
  // Break-glass sign-in is not reopened by a report that failed to go out.
  t.like((await ta.call('GET', '/v1/settings/mail')).body.break_glass, { open: false });
  t.is((await ta.call('GET', '/v1/status', { token: null })).body.auth.email_codes, 'working');
  t.true((await ta.app.verifyLedger()).ok);
});

test('a send that fails once and works on the retry counts as sent', async (t) => {
  const { ta } = await seededApp(t);
  const tries: string[] = [];
  const mailer = new DigestMailer({
    digest: ta.app.digest.digest,
    checkpoint: () => ta.app.checkpoints.latestSigned(),
    people: createPeople(ta.app.db).directory,
    mail: {
      send: async (to, _subject, _text, opts) => {
        t.is(opts?.signInState, false);
        tries.push(to);
        return tries.filter((x) => x === to).length === 1 ? { ok: false, reason: 'temporary failure' } : { ok: true };
      },
    },
    leases: new LeaseRepo(ta.app.db),
    state: new DigestStateRepo(new SettingsRepo(ta.app.db)),
    ledger: ta.app.ledger,
    clock: ta.clock,
    log: createLogger(loadConfig({ SERVICE_LOG_LEVEL: 'fatal' })),
    holder: 'test-holder',
    at: '08:00',
    timeZone: 'UTC',
  });
  t.like(await mailer.sendFor(ta.clock.now()), { sent: true, ok: true, failed: [] });
  t.deepEqual(tries, ['admin@bank.example', 'admin@bank.example', 'owner@bank.example', 'owner@bank.example']);
  t.is((await events(ta, 'config.digest_sent')).length, 1);
});

test('two hosts on one database at the same moment: one sends the day’s digest, once', async (t) => {
  const { ta: one, smtp } = await seededApp(t, { keepStore: true });
  t.teardown(() => one.store.cleanup());
  const two = await startApp(t, { store: one.store, clock: one.clock, env: one.env });
  const outcomes = await Promise.all([
    one.app.digest.mailer.sendFor(one.clock.now()),
    two.app.digest.mailer.sendFor(one.clock.now()),
    one.app.digest.mailer.sendFor(one.clock.now()),
    two.app.digest.mailer.sendFor(one.clock.now()),
  ]);
  t.is(outcomes.filter((o) => o.sent).length, 1, JSON.stringify(outcomes));
  t.is(digests(smtp).length, 2, 'owner and admin, once each');
  t.is((await events(one, 'config.digest_sent')).length, 1);
});

test('a host that dies while sending the day’s digest: once its lease (15 s) has run out, the next tick of another host sends it, once', async (t) => {
  const { ta: one, smtp } = await seededApp(t, { keepStore: true });
  t.teardown(() => one.store.cleanup());
  const two = await startApp(t, { store: one.store, clock: one.clock, env: one.env });
  one.clock.set('2026-06-02T06:00:00.000Z');
  // As a host that took the day's lease at 08:00 and died before recording anything.
  t.true(await new LeaseRepo(one.app.db).take(digestLease('2026-06-02'), 'dead-host:4711:digest', 15_000, one.clock.now().getTime()));
  await Promise.all([one.app.tick(), two.app.tick()]);
  t.is(digests(smtp).length, 0, 'not while the dead host’s lease holds');
  one.clock.advance(16_000);
  await Promise.all([one.app.tick(), two.app.tick()]);
  t.is(digests(smtp).length, 2, 'owner and admin, once each');
  const [sent, ...more] = await events(one, 'config.digest_sent');
  t.deepEqual(more, []);
  t.like(sent, { data: { day: '2026-06-02' } });
  one.clock.advance(MINUTE);
  await Promise.all([one.app.tick(), two.app.tick()]);
  t.is(digests(smtp).length, 2, 'and never again that day');
  t.is((await new LeaseRepo(one.app.db).get(digestLease('2026-06-02')))?.until_ms, 0, 'the lease was held for the sending only');
});
