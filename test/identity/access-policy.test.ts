import test from 'ava';
import { AppError } from '../../host/errors.ts';
import type { Principal } from '../../host/identity/principal.ts';
import {
  checkAddress,
  compilePolicy,
  DISPOSABLE_DOMAINS,
  DOMAIN_PATTERN,
  initialPolicy,
  isDisposable,
  isWebmail,
  parsePolicy,
  PolicyError,
  WEBMAIL_DOMAINS,
  type AccessPolicy,
} from '../../host/identity/access-policy.ts';
import { AccessPolicyService, type SessionEnder } from '../../host/identity/access.service.ts';
import { PeopleRepo } from '../../host/identity/people.repo.ts';
import { SettingsRepo } from '../../host/settings/settings.repo.ts';
import type { Trx } from '../../host/storage/db.ts';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { UnitOfWork } from '../../host/storage/unit-of-work.ts';

const policy = (p: Partial<AccessPolicy> = {}): AccessPolicy => ({ allowed_domains: [], blocked: [], block_webmail: false, ...p });
const admits = (p: Partial<AccessPolicy>, email: string) => checkAddress(policy(p), email).allowed;
const reason = (p: Partial<AccessPolicy>, email: string) => {
  const r = checkAddress(policy(p), email);
  return r.allowed ? null : r.reason;
};

// ---- the pure rules -------------------------------------------------------------------------

test('the built-in disposable list has exactly 85 distinct valid domains, mailinator.com among them, no webmail', (t) => {
  t.is(DISPOSABLE_DOMAINS.length, 85);
  t.is(new Set(DISPOSABLE_DOMAINS).size, 85);
  t.true(DISPOSABLE_DOMAINS.includes('mailinator.com'));
  for (const d of [
    'guerrillamail.com',
    '10minutemail.com',
    'temp-mail.org',
    'yopmail.com',
    'trashmail.com',
    'sharklasers.com',
    'getnada.com',
    'dispostable.com',
    'maildrop.cc',
  ]) {
    t.true(DISPOSABLE_DOMAINS.includes(d), d);
  }
  for (const d of DISPOSABLE_DOMAINS) {
    t.true(DOMAIN_PATTERN.test(d), d);
    t.false(isWebmail(d), d);
  }
  t.is(new Set(WEBMAIL_DOMAINS).size, WEBMAIL_DOMAINS.length);
  for (const d of WEBMAIL_DOMAINS) t.true(DOMAIN_PATTERN.test(d), d);
});

test('an allowed domain admits its subdomains and nothing that merely looks like it', (t) => {
  const p = { allowed_domains: ['bank.example'] };
  t.true(admits(p, 'alice@bank.example'));
  t.true(admits(p, 'bob@eu.ops.bank.example'));
  t.is(reason(p, 'eve@notbank.example'), 'not_allowed_domain');
  t.is(reason(p, 'eve@bank.example.evil.test'), 'not_allowed_domain');
  t.is(reason(p, 'eve@example'), 'invalid_address');
  t.true(admits({}, 'anyone@anywhere.test'), 'an empty list means no domain restriction');
});

test('blocked entries: an address blocks only itself, a domain blocks itself and its subdomains', (t) => {
  const p = { allowed_domains: ['bank.example'], blocked: ['mallory@bank.example', 'contractors.bank.example'] };
  t.is(reason(p, 'mallory@bank.example'), 'blocked');
  t.is(reason(p, ' Mallory@BANK.example '), 'blocked');
  t.true(admits(p, 'mallory2@bank.example'));
  t.true(admits(p, 'mallory@eu.bank.example'), 'an address entry does not cover subdomains');
  t.is(reason(p, 'x@contractors.bank.example'), 'blocked');
  t.is(reason(p, 'x@a.contractors.bank.example'), 'blocked');
  t.true(admits(p, 'x@bank.example'));
  t.true(admits(p, 'x@notcontractors.bank.example'));
});

test('disposable domains are always refused, even when allowed, and their subdomains too', (t) => {
  t.is(reason({}, 'x@mailinator.com'), 'disposable');
  t.is(reason({ allowed_domains: ['mailinator.com'] }, 'x@mailinator.com'), 'disposable');
  t.is(reason({ allowed_domains: ['mailinator.com'] }, 'x@sub.mailinator.com'), 'disposable');
  t.is(reason({}, 'X@YopMail.COM'), 'disposable');
  t.true(isDisposable('Sub.Guerrillamail.com'));
  t.false(isDisposable('bank.example'));
  t.false(isDisposable('mailinator.com.bank.example'));
});

test('webmail is refused only with block_webmail, including per-country domains and subdomains', (t) => {
  for (const e of [
    'a@gmail.com',
    'a@googlemail.com',
    'a@outlook.com',
    'a@hotmail.co.uk',
    'a@yahoo.fr',
    'a@gmx.de',
    'a@gmx.at',
    'a@web.de',
    'a@proton.me',
    'a@yandex.ru',
    'a@mail.ru',
    'a@qq.com',
    'a@163.com',
    'a@icloud.com',
    'a@x.gmail.com',
  ]) {
    t.is(reason({ block_webmail: true }, e), 'webmail', e);
    t.true(admits({ block_webmail: false }, e), e);
  }
  t.true(admits({ block_webmail: true }, 'a@bank.example'));
  t.true(admits({ block_webmail: true }, 'a@gmx-bank.example'));
  t.false(isWebmail('gmail.com.bank.example'));
  // a refusal wins over an allowed domain
  t.is(reason({ block_webmail: true, allowed_domains: ['gmail.com'] }, 'a@gmail.com'), 'webmail');
});

test('addresses are trimmed and lower-cased; malformed ones are refused', (t) => {
  const p = { allowed_domains: ['bank.example'] };
  t.true(admits(p, '  Alice@Bank.EXAMPLE\n'));
  for (const bad of [
    '',
    'alice',
    '@bank.example',
    'alice@',
    'alice@bank',
    'a b@bank.example',
    'alice@bank.example.',
    'alice@-bank.example',
    'alice@bänk.example',
    'a@b@bank.example',
  ]) {
    t.is(reason({}, bad), 'invalid_address', JSON.stringify(bad));
  }
});

test('parsePolicy normalises entries, drops duplicates and refuses bad ones', (t) => {
  t.deepEqual(
    parsePolicy({
      allowed_domains: [' Bank.Example ', 'bank.example', 'EU.bank.example'],
      blocked: ['Mallory@Bank.Example', 'evil.test'],
      block_webmail: true,
    }),
    {
      allowed_domains: ['bank.example', 'eu.bank.example'],
      blocked: ['mallory@bank.example', 'evil.test'],
      block_webmail: true,
    },
  );
  const bad: unknown[] = [
    null,
    [],
    { allowed_domains: [], blocked: [] },
    { allowed_domains: [], blocked: [], block_webmail: 'yes' },
    { allowed_domains: ['a@bank.example'], blocked: [], block_webmail: false },
    { allowed_domains: ['bank'], blocked: [], block_webmail: false },
    { allowed_domains: [], blocked: ['not an address'], block_webmail: false },
    { allowed_domains: [], blocked: [7], block_webmail: false },
    { allowed_domains: Array.from({ length: 501 }, (_, i) => `d${i}.example`), blocked: [], block_webmail: false },
    { allowed_domains: [], blocked: [], block_webmail: false, extra: 1 },
  ];
  for (const b of bad) t.throws(() => parsePolicy(b), { instanceOf: PolicyError }, JSON.stringify(b)?.slice(0, 80));
});

test("a new install allows the first owner's domain unless it is webmail", (t) => {
  t.deepEqual(initialPolicy('Owner@Bank.Example'), policy({ allowed_domains: ['bank.example'] }));
  t.deepEqual(initialPolicy('owner@eu.bank.example'), policy({ allowed_domains: ['eu.bank.example'] }));
  t.deepEqual(initialPolicy('owner@gmail.com'), policy());
  t.deepEqual(initialPolicy('owner@gmx.net'), policy());
  t.deepEqual(initialPolicy('owner@mailinator.com'), policy());
  t.true(compilePolicy(initialPolicy('owner@bank.example')).admits('owner@bank.example'));
});

// ---- the service and the API ----------------------------------------------------------------

const ADMIN: Principal = { kind: 'admin_token', actor: 'admin-token', role: 'owner', email: null };

class FakeSessions implements SessionEnder {
  calls: Array<{ allows: (email: string) => boolean; atMs: number; inTrx: boolean }> = [];
  ended = 0;
  async endOutside(trx: Trx, allows: (email: string) => boolean, atMs: number): Promise<number> {
    this.calls.push({ allows, atMs, inTrx: typeof trx.commit === 'function' });
    return this.ended;
  }
}

function serviceOn(ta: TestApp, sessions: SessionEnder = new FakeSessions()): AccessPolicyService {
  return new AccessPolicyService({
    settings: new SettingsRepo(ta.app.db),
    work: new UnitOfWork(ta.app.db),
    people: new PeopleRepo(ta.app.db),
    ledger: ta.app.ledger,
    clock: ta.clock,
    sessions,
  });
}

async function accessEvents(ta: TestApp): Promise<Array<{ actor: string; data: any }>> {
  return (await ta.call('GET', '/v1/ledger?type=identity.access_changed&order=asc')).body.events;
}

test('GET answers the open policy until bootstrap starts one; PUT saves it normalised, records before and after', async (t) => {
  const ta = await startApp(t);
  const first = await ta.call('GET', '/v1/settings/access');
  t.is(first.status, 200);
  const never = { version: 0, updated_at: null, updated_by: null };
  t.deepEqual(first.body, { allowed_domains: [], blocked: [], block_webmail: false, disposable_count: 85, ...never });
  await makeOperating(ta);
  const started = { allowed_domains: ['bank.example'], blocked: [], block_webmail: false };
  t.deepEqual((await ta.call('GET', '/v1/settings/access')).body, { ...started, disposable_count: 85, ...never }, 'bootstrap starts the policy at version 0');

  const body = {
    allowed_domains: ['Bank.Example', 'bank.example', 'subsidiary.example'],
    blocked: ['Mallory@bank.example', 'contractors.bank.example'],
    block_webmail: true,
  };
  const put = await ta.call('PUT', '/v1/settings/access', { body });
  t.is(put.status, 200);
  const saved = { allowed_domains: ['bank.example', 'subsidiary.example'], blocked: ['mallory@bank.example', 'contractors.bank.example'], block_webmail: true };
  const v1 = { version: 1, updated_at: ta.clock.now().toISOString(), updated_by: 'admin-token' };
  t.deepEqual(put.body, { ...saved, disposable_count: 85, ...v1 });
  t.deepEqual((await ta.call('GET', '/v1/settings/access')).body, { ...saved, disposable_count: 85, ...v1 });

  const second = await ta.call('PUT', '/v1/settings/access', { body: { allowed_domains: ['bank.example'], blocked: [], block_webmail: false } });
  t.is(second.status, 200);
  const events = await accessEvents(ta);
  t.is(events.length, 2);
  t.is(events[0]!.actor, 'admin-token');
  t.deepEqual(events[0]!.data, { before: started, after: saved, sessions_ended: 0 });
  t.deepEqual(events[1]!.data, { before: saved, after: { allowed_domains: ['bank.example'], blocked: [], block_webmail: false }, sessions_ended: 0 });
  t.true((await ta.app.verifyLedger()).ok);
});

test('PUT refuses bad bodies with 400 and changes nothing', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const ok = { allowed_domains: ['bank.example'], blocked: [], block_webmail: false };
  const bad: unknown[] = [
    '{not json',
    {},
    { ...ok, block_webmail: 'true' },
    { ...ok, allowed_domains: 'bank.example' },
    { ...ok, allowed_domains: ['owner@bank.example'] },
    { ...ok, allowed_domains: ['bank'] },
    { ...ok, allowed_domains: ['bank..example'] },
    { ...ok, allowed_domains: ['bank.example '] },
    { ...ok, blocked: ['not an address'] },
    { ...ok, blocked: [''] },
    { ...ok, blocked: [1] },
    { ...ok, blocked: Array.from({ length: 501 }, (_, i) => `u${i}@bank.example`) },
    { ...ok, extra: true },
  ];
  for (const b of bad) {
    const res = await ta.call('PUT', '/v1/settings/access', { body: b });
    t.is(res.status, 400, JSON.stringify(b).slice(0, 80));
    t.true(['invalid_body', 'invalid_json'].includes(res.body.error), JSON.stringify(res.body));
  }
  const max = await ta.call('PUT', '/v1/settings/access', { body: { ...ok, blocked: Array.from({ length: 500 }, (_, i) => `u${i}@bank.example`) } });
  t.is(max.status, 200);
  t.is(max.body.blocked.length, 500);
  t.is((await accessEvents(ta)).length, 1);
});

test('a policy that would shut out every enabled owner is refused with 409 would_lock_out_owners', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const locking: AccessPolicy[] = [
    policy({ allowed_domains: ['other.example'] }),
    policy({ blocked: ['owner@bank.example'] }),
    policy({ blocked: ['bank.example'] }),
    policy({ allowed_domains: ['eu.bank.example'] }),
  ];
  for (const body of locking) {
    const res = await ta.call('PUT', '/v1/settings/access', { body });
    t.is(res.status, 409, JSON.stringify(body));
    t.is(res.body.error, 'would_lock_out_owners');
  }
  t.like((await ta.call('GET', '/v1/settings/access')).body, {
    allowed_domains: ['bank.example'],
    blocked: [],
    block_webmail: false,
    disposable_count: 85,
    version: 0,
  });
  t.is((await accessEvents(ta)).length, 0);
  // one owner admitted is enough
  t.is((await ta.call('PUT', '/v1/settings/access', { body: policy({ allowed_domains: ['other.example', 'bank.example'] }) })).status, 200);
  t.true((await ta.app.verifyLedger()).ok);
});

test('webmail owners: block_webmail would shut them out; before the first owner nothing can be saved', async (t) => {
  const ta = await startApp(t);
  const early = await ta.call('PUT', '/v1/settings/access', { body: policy({ allowed_domains: ['bank.example'] }) });
  t.is(early.status, 409);
  t.is(early.body.error, 'would_lock_out_owners');
  await makeOperating(ta, 'owner@gmail.com');
  const res = await ta.call('PUT', '/v1/settings/access', { body: policy({ block_webmail: true }) });
  t.is(res.status, 409);
  t.is(res.body.error, 'would_lock_out_owners');
});

test('the API needs a token: viewer to read, admin to change', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  t.is((await ta.call('GET', '/v1/settings/access', { token: null })).status, 401);
  t.is((await ta.call('PUT', '/v1/settings/access', { token: null, body: policy() })).status, 401);
  t.is((await ta.call('GET', '/v1/settings/access', { token: 'nope' })).status, 401);
});

test('put ends sessions outside the new policy in its transaction and records how many', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const sessions = new FakeSessions();
  sessions.ended = 3;
  const access = serviceOn(ta, sessions);
  const after = await access.put(policy({ allowed_domains: ['bank.example'], blocked: ['mallory@bank.example'] }), ADMIN);
  t.deepEqual(after, policy({ allowed_domains: ['bank.example'], blocked: ['mallory@bank.example'] }));
  t.is(sessions.calls.length, 1);
  const call = sessions.calls[0]!;
  t.true(call.inTrx);
  t.is(call.atMs, ta.clock.now().getTime());
  t.true(call.allows('owner@bank.example'));
  t.true(call.allows('Someone@Bank.Example'));
  t.false(call.allows('mallory@bank.example'));
  t.false(call.allows('x@other.example'));
  const events = await accessEvents(ta);
  t.is(events.at(-1)!.data.sessions_ended, 3);
  // a refused change does not end anything
  await t.throwsAsync(access.put(policy({ allowed_domains: ['other.example'] }), ADMIN), { instanceOf: AppError, message: /shut out/ });
  t.is(sessions.calls.length, 1);
  t.true((await ta.app.verifyLedger()).ok);
});

test('a failing session ender rolls the change back', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const access = serviceOn(ta, {
    endOutside: async () => {
      throw new Error('sessions unavailable');
    },
  });
  await t.throwsAsync(access.put(policy({ blocked: ['contractors.bank.example'] }), ADMIN), { message: 'sessions unavailable' });
  t.deepEqual(await access.get(), policy({ allowed_domains: ['bank.example'] }));
  t.is((await accessEvents(ta)).length, 0);
});

test('allows and check follow the policy in force, a change at once, a change behind its back within a second', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const access = serviceOn(ta);
  await access.put(policy(), ADMIN);
  t.true(await access.allows('anyone@else.example'));
  t.false(await access.allows('x@mailinator.com'));
  await access.put(policy({ allowed_domains: ['bank.example'] }), ADMIN);
  t.false(await access.allows('anyone@else.example'));
  t.true(await access.allows(' Alice@BANK.example '));
  await t.throwsAsync(access.check('anyone@else.example'), { instanceOf: AppError, code: 'not_allowed_by_policy' } as never);
  const err = await t.throwsAsync(access.check('x@mailinator.com'));
  t.is((err as AppError).code, 'not_allowed_by_policy');
  t.is((err as AppError).status, 400);
  await access.check('alice@bank.example');

  // another process (here: another service object) changes it
  const other = serviceOn(ta);
  await other.put(policy({ allowed_domains: ['bank.example'], blocked: ['alice@bank.example'] }), ADMIN);
  t.true(await other.allows('bob@bank.example'));
  t.false(await other.allows('alice@bank.example'));
  t.true(await access.allows('alice@bank.example'), 'this process holds its reading for a second');
  ta.clock.advance(1000);
  t.false(await access.allows('alice@bank.example'));
  await ta.app.db.transaction(async (trx) => t.false(await access.allows('alice@bank.example', trx)));
});

test("initialise writes the starting policy inside the caller's transaction", async (t) => {
  const ta = await startApp(t);
  const access = serviceOn(ta);
  const written = await ta.app.db.transaction((trx) => access.initialise(trx, 'Owner@Bank.Example', ta.clock.now().toISOString()));
  t.deepEqual(written, policy({ allowed_domains: ['bank.example'] }));
  t.deepEqual(await access.get(), policy({ allowed_domains: ['bank.example'] }));
  t.false(await access.allows('x@other.example'));

  await ta.app.db.transaction((trx) => access.initialise(trx, 'owner@gmail.com', ta.clock.now()));
  t.deepEqual(await access.get(), policy());
  t.true(await access.allows('x@other.example'));

  const err = await t.throwsAsync(ta.app.db.transaction((trx) => access.initialise(trx, 'owner@mailinator.com', ta.clock.now())));
  t.is((err as AppError).code, 'not_allowed_by_policy');
  t.deepEqual(await access.get(), policy());

  // rolled back with the caller's transaction
  await t.throwsAsync(
    ta.app.db.transaction(async (trx) => {
      await access.initialise(trx, 'owner@bank.example', ta.clock.now());
      throw new Error('bootstrap failed');
    }),
  );
  t.deepEqual(await access.get(), policy());
  t.true(await access.allows('x@other.example'));
});

test('an unreadable stored policy admits nobody and an admin can replace it', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const access = serviceOn(ta);
  await ta.app.db('settings').where({ name: 'access' }).update({ value: '{"allowed_domains": "oops"}' });
  await t.throwsAsync(access.allows('owner@bank.example'));
  t.is((await ta.call('GET', '/v1/settings/access')).status, 500);
  const res = await ta.call('PUT', '/v1/settings/access', { body: policy({ allowed_domains: ['bank.example'] }) });
  t.is(res.status, 200);
  t.is((await accessEvents(ta)).at(-1)!.data.before, null);
  t.true(await access.allows('owner@bank.example'));
});

test('policy changes and owner role changes at once never deadlock: each answers 200 or 409, never 503', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta, 'owner@bank.example');
  t.is((await ta.call('POST', '/v1/people', { body: { email: 'second@bank.example', name: 'Second', role: 'owner' } })).status, 201);
  const answers = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      i % 2 === 0
        ? ta.call('PUT', '/v1/settings/access', { body: { allowed_domains: ['bank.example'], blocked: [], block_webmail: i % 4 === 0 } })
        : ta.call('PATCH', '/v1/people/second@bank.example', { body: { role: i % 4 === 1 ? 'admin' : 'owner' } }),
    ),
  );
  const bad = answers.filter((a) => a.status !== 200 && a.status !== 409);
  t.deepEqual(
    bad.map((a) => `${a.status} ${JSON.stringify(a.body)}`),
    [],
  );
  t.true((await ta.app.verifyLedger()).ok);
});
