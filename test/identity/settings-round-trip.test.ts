import test, { type ExecutionContext } from 'ava';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';

// Every settings document with a GET and a PUT takes back what its GET answered: read-only
// fields are ignored, except that a version other than the stored one answers 409. So a script
// can read, change one field and write back.

interface Doc {
  path: string;
  /** Brings the document to a state with something to change (and at least version 1). */
  prepare(ta: TestApp): Promise<void>;
  /** One field changed in a GET answer, and how to see that it held. */
  change(body: any): any;
  held(body: any): boolean;
  /** The ledger event a change records. */
  event: string;
  conflict: string;
}

const DOCS: Record<string, Doc> = {
  policy: {
    path: '/v1/policy',
    prepare: async (ta) => {
      const res = await ta.call('PUT', '/v1/policy', { body: { ...policyOf((await ta.call('GET', '/v1/policy')).body), safe_for_l2: ['restart_pod'] } });
      if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    },
    change: (b) => ({ ...b, max_actions_per_service_per_hour: b.max_actions_per_service_per_hour + 1 }),
    held: (b) => b.max_actions_per_service_per_hour === 7,
    event: 'config.policy_changed',
    // docs/api.md promised this code for the policy before version_conflict existed.
    conflict: 'policy_version_conflict',
  },
  mail: {
    path: '/v1/settings/mail',
    prepare: async (ta) => {
      const body = { smtp_host: '127.0.0.1', smtp_port: 2525, smtp_user: 'relay-user', smtp_password: 'relay-password-0123', mail_from: 'oncall@bank.example' };
      const res = await ta.call('PUT', '/v1/settings/mail', { body });
      if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    },
    // The user, not the host or port: those move the stored password, which then must be given again.
    change: (b) => ({ ...b, smtp_user: 'relay-user-2' }),
    held: (b) => b.smtp_user === 'relay-user-2' && b.smtp_password_set === true && b.smtp_port === 2525,
    event: 'config.mail_saved',
    conflict: 'version_conflict',
  },
  access: {
    path: '/v1/settings/access',
    prepare: async (ta) => {
      const res = await ta.call('PUT', '/v1/settings/access', {
        body: { allowed_domains: ['bank.example'], blocked: ['mallory@bank.example'], block_webmail: false },
      });
      if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    },
    change: (b) => ({ ...b, block_webmail: true }),
    held: (b) => b.block_webmail === true && b.blocked.includes('mallory@bank.example'),
    event: 'identity.access_changed',
    conflict: 'version_conflict',
  },
};

/** The policy document alone (what a PUT needed before round trips were accepted). */
function policyOf(b: any) {
  const { version: _v, source: _s, updated_at: _a, updated_by: _b, ...doc } = b;
  return doc;
}

async function ready(t: ExecutionContext, doc: Doc): Promise<TestApp> {
  const ta = await startApp(t);
  await makeOperating(ta);
  await doc.prepare(ta);
  return ta;
}

const eventCount = async (ta: TestApp, type: string) => (await ta.call('GET', `/v1/ledger?type=${type}&limit=1000`)).body.events.length as number;

for (const [name, doc] of Object.entries(DOCS)) {
  test(`${name}: PUT of exactly what GET answered is 200 and changes nothing`, async (t) => {
    const ta = await ready(t, doc);
    const got = await ta.call('GET', doc.path);
    t.is(got.status, 200);
    t.is(got.body.version, 1, 'the GET says its version');
    t.is(got.body.updated_by, 'admin-token');
    const events = await eventCount(ta, doc.event);
    ta.clock.advance(60_000);
    const put = await ta.call('PUT', doc.path, { body: got.body });
    t.is(put.status, 200, JSON.stringify(put.body));
    t.deepEqual((await ta.call('GET', doc.path)).body, got.body, 'same document, same version, same updated_at');
    t.is(await eventCount(ta, doc.event), events, 'nothing recorded');
  });

  test(`${name}: GET, change one field, PUT: the change holds under the next version and the rest is kept`, async (t) => {
    const ta = await ready(t, doc);
    const got = (await ta.call('GET', doc.path)).body;
    ta.clock.advance(60_000);
    const put = await ta.call('PUT', doc.path, { body: doc.change(got) });
    t.is(put.status, 200, JSON.stringify(put.body));
    const after = (await ta.call('GET', doc.path)).body;
    t.true(doc.held(after), JSON.stringify(after));
    t.is(after.version, got.version + 1);
    t.is(after.updated_at, ta.clock.now().toISOString());
    t.is(after.updated_by, 'admin-token');
  });

  test(`${name}: a PUT based on an older version answers 409 ${doc.conflict} and changes nothing`, async (t) => {
    const ta = await ready(t, doc);
    const stale = (await ta.call('GET', doc.path)).body;
    t.is((await ta.call('PUT', doc.path, { body: doc.change(stale) })).status, 200);
    const now = (await ta.call('GET', doc.path)).body;
    const res = await ta.call('PUT', doc.path, { body: { ...doc.change(stale), version: stale.version } });
    t.is(res.status, 409);
    t.is(res.body.error, doc.conflict);
    t.deepEqual((await ta.call('GET', doc.path)).body, now);
    // Without a version the change applies to whatever is stored (read-only fields still ignored).
    const { version: _, ...unversioned } = now;
    t.is((await ta.call('PUT', doc.path, { body: { ...unversioned, updated_by: 'someone else', updated_at: 'whenever', source: 'anything' } })).status, 200);
    t.is((await ta.call('GET', doc.path)).body.updated_by, 'admin-token');
  });

  test(`${name}: two PUTs read at the same version at once: one is saved, the other answers 409`, async (t) => {
    const ta = await ready(t, doc);
    const got = (await ta.call('GET', doc.path)).body;
    const first = doc.change(got);
    const second = { ...doc.change(got) };
    // Different changes, so that neither is a no-op after the other.
    if (name === 'policy') second.max_actions_per_service_per_hour = 9;
    if (name === 'mail') second.smtp_user = 'relay-user-3';
    if (name === 'access') second.blocked = ['eve@bank.example'];
    const results = await Promise.all([ta.call('PUT', doc.path, { body: first }), ta.call('PUT', doc.path, { body: second })]);
    t.deepEqual(results.map((r) => r.status).sort(), [200, 409], JSON.stringify(results.map((r) => r.body)));
    t.is(results.find((r) => r.status === 409)!.body.error, doc.conflict);
    t.is((await ta.call('GET', doc.path)).body.version, got.version + 1);
  });
}

test('a version that is not a whole number is refused with 400 before anything is read', async (t) => {
  const ta = await ready(t, DOCS.mail!);
  for (const path of [DOCS.policy!.path, DOCS.mail!.path, DOCS.access!.path]) {
    const body = { ...(await ta.call('GET', path)).body, version: 'latest' };
    const res = await ta.call('PUT', path, { body });
    t.is(res.status, 400, path);
    t.is(res.body.error, 'invalid_body', path);
  }
});

test('mail: a never-configured GET sent back saves nothing', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const got = (await ta.call('GET', '/v1/settings/mail')).body;
  const events = await eventCount(ta, 'config.mail_saved');
  const put = await ta.call('PUT', '/v1/settings/mail', { body: got });
  t.is(put.status, 200, JSON.stringify(put.body));
  t.deepEqual(put.body, got);
  t.is(await eventCount(ta, 'config.mail_saved'), events);
});

test('connectors: a GET answer sent back (secrets masked) is 200 and changes nothing; one setting changed holds and keeps the secret', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const path = '/v1/connectors/orders-api';
  const created = await ta.call('PUT', path, {
    body: { kind: 'http', settings: { base_url: 'http://127.0.0.1:9', health_path: '/healthz', bearer_token: 'orders-token-0123456789', timeout_s: 5 } },
  });
  t.is(created.status, 201, JSON.stringify(created.body));
  const got = (await ta.call('GET', path)).body;
  t.deepEqual(got.settings.bearer_token, { set: true });
  const events = await eventCount(ta, 'config.connector_saved');

  const same = await ta.call('PUT', path, { body: got });
  t.is(same.status, 200, JSON.stringify(same.body));
  t.deepEqual((await ta.call('GET', path)).body, got, 'nothing changed, not even updated_at');
  t.is(await eventCount(ta, 'config.connector_saved'), events);

  ta.clock.advance(60_000);
  const changed = await ta.call('PUT', path, { body: { ...got, settings: { ...got.settings, timeout_s: 7 } } });
  t.is(changed.status, 200, JSON.stringify(changed.body));
  t.like(changed.body, { settings: { timeout_s: 7, bearer_token: { set: true } }, updated_at: ta.clock.now().toISOString() });
  const row = await ta.app.db('connectors').where({ name: 'orders-api' }).first();
  t.truthy(JSON.parse(row.secrets)['/bearer_token'], 'the masked secret kept the stored one');
  t.is(await eventCount(ta, 'config.connector_saved'), events + 1);
});
