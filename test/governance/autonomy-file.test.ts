import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { SECOND, TestClock } from '../../host/clock.ts';
import { autonomyFileProblem, readAutonomyFile } from '../../host/governance/autonomy.file.ts';
import { defaultPolicy } from '../../host/policy/policy.schema.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { ENGINE, MARIADB_URL, withServer, type TestStore } from '../helpers/db.ts';
import { testNeeding } from '../helpers/needs.ts';
import { signedIn } from '../helpers/people.ts';

/*
 * autonomy.json in SERVICE_CONFIG_DIR: the only way a service reaches L2 (docs/governance.md,
 * "autonomy.json"). The file is re-read on the tick, which tests call after moving the clock.
 */

/** Why the tests of several hosts on one MariaDB cannot run (asked before any test is declared), or null. */
const mariadbMissing = await withServer(MARIADB_URL, (db) => db.raw('select 1')).then(
  () => null,
  (e: Error) => `MariaDB at ${new URL(MARIADB_URL).host} not reachable: ${e.message}`,
);

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const doc = (services: Record<string, string>) => JSON.stringify({ services }, null, 2);

/** A SERVICE_CONFIG_DIR holding autonomy.json (when `content` is not null), removed after the test. */
function configDir(t: ExecutionContext, content: string | null): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-autonomy-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  if (content !== null) writeFileSync(path.join(dir, 'autonomy.json'), content);
  return dir;
}
const write = (dir: string, content: string) => writeFileSync(path.join(dir, 'autonomy.json'), content);

async function operating(t: ExecutionContext, dir: string | null, opts: Parameters<typeof startApp>[1] = {}): Promise<TestApp> {
  const ta = await startApp(t, { ...opts, env: { ...(dir === null ? {} : { SERVICE_CONFIG_DIR: dir }), ...opts.env } });
  await makeOperating(ta);
  return ta;
}

/** The tick 10 s later, as the running service does it. */
async function tick(ta: TestApp): Promise<void> {
  ta.clock.advance(10 * SECOND);
  await ta.app.tick();
}

/** Alerts naming each service, so the install knows them (GET /v1/autonomy lists them with no stored level). */
async function known(ta: TestApp, ...services: string[]): Promise<void> {
  for (const service of services) {
    const res = await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name: `X-${service}`, service, severity: 'critical' } });
    if (res.status !== 202) throw new Error(`push: ${JSON.stringify(res.body)}`);
  }
}

const events = async (ta: TestApp, type: string) => (await ta.call('GET', `/v1/ledger?type=${type}&order=asc&limit=2000`)).body.events as any[];
const overview = async (ta: TestApp) => (await ta.call('GET', '/v1/autonomy')).body;
const levels = async (ta: TestApp) =>
  Object.fromEntries(((await overview(ta)).services as any[]).map((s) => [s.service, `${s.level} ${s.source}`])) as Record<string, string>;
const changes = async (ta: TestApp) =>
  (await events(ta, 'governance.autonomy_changed')).map((e) => [e.actor, e.data.service, e.data.from, e.data.to, e.data.sha256]);
const doctorPart = async (ta: TestApp) =>
  ((await ta.call('GET', '/v1/doctor?fresh=1')).body.components as any[]).find((c) => c.name === 'autonomy') as {
    status: string;
    detail: string;
    fix: string | null;
  };
const code = async (p: Promise<void>) =>
  (
    (await p.then(
      () => null,
      (e: { code: string }) => e,
    )) as { code: string } | null
  )?.code ?? 'allowed';

test('the file is checked with its schema: levels off|shadow|L1|L2, service names as the estate writes them, nothing else', (t) => {
  t.is(autonomyFileProblem({ services: { payments: 'L2', 'search-api': 'L1', 'a.b:c/d@e+f': 'off', x1: 'shadow' } }), null);
  t.is(autonomyFileProblem({ services: {} }), null);
  t.is(autonomyFileProblem({ services: { payments: 'L3' } }), 'services.payments must be one of: off, shadow, L1, L2');
  t.is(autonomyFileProblem({ services: { payments: 'l2' } }), 'services.payments must be one of: off, shadow, L1, L2');
  t.is(autonomyFileProblem({ services: { 'has space': 'L1' } }), 'services: "has space" is not a valid service name');
  t.is(autonomyFileProblem({ services: { '-lead': 'L1' } }), 'services: "-lead" is not a valid service name');
  t.is(autonomyFileProblem({ services: { payments: 'L2' }, extra: 1 }), 'body: unknown field extra');
  t.is(autonomyFileProblem({}), 'body: services is required');
  t.is(autonomyFileProblem({ services: ['payments'] }), 'services must be object');
  t.is(autonomyFileProblem([]), 'body must be object');
});

test('reading the file: its SHA-256 is of the bytes; missing is absent; unreadable, not JSON or not valid is bad with the reason', (t) => {
  const dir = configDir(t, null);
  const file = path.join(dir, 'autonomy.json');
  t.deepEqual(readAutonomyFile(file), { state: 'absent' });
  const text = doc({ search: 'L1', payments: 'L2' });
  write(dir, text);
  const good = readAutonomyFile(file);
  t.is(good.state, 'good');
  if (good.state !== 'good') return;
  t.is(good.sha256, sha(text));
  t.deepEqual(
    [...good.services],
    [
      ['payments', 'L2'],
      ['search', 'L1'],
    ],
  );
  write(dir, '{"services": {');
  t.like(readAutonomyFile(file), { state: 'bad', sha256: sha('{"services": {') });
  t.regex((readAutonomyFile(file) as { problem: string }).problem, /^autonomy\.json is not valid JSON: /);
  write(dir, doc({ payments: 'L9' }));
  t.like(readAutonomyFile(file), { state: 'bad', problem: 'autonomy.json is not valid: services.payments must be one of: off, shadow, L1, L2' });
  rmSync(file);
  writeFileSync(file, 'x'.repeat(300 * 1024));
  t.like(readAutonomyFile(file), { state: 'bad', problem: 'autonomy.json is larger than 262144 bytes' });
  // Unreadable (a folder by that name reads as EISDIR, even for root).
  rmSync(file);
  mkdirSync(file);
  t.deepEqual(readAutonomyFile(file), { state: 'bad', sha256: null, problem: 'autonomy.json could not be read (EISDIR)' });
});

test('at start the file grants its levels (L2 too): source "file" in GET /v1/autonomy, each change an event by config-file with the SHA-256', async (t) => {
  const text = doc({ payments: 'L2', search: 'L1' });
  const ta = await operating(t, configDir(t, text));
  const o = await overview(ta);
  t.like(
    o.services.find((s: any) => s.service === 'payments'),
    { level: 'L2', source: 'file', pending: null },
  );
  t.deepEqual(await levels(ta), { payments: 'L2 file', search: 'L1 file' });
  t.like(o.file, { state: 'good', sha256: sha(text), problem: null });
  t.deepEqual(o.file.in_force.services, [
    { service: 'payments', level: 'L2' },
    { service: 'search', level: 'L1' },
  ]);
  t.is(o.file.in_force.sha256, sha(text));
  t.deepEqual(await changes(ta), [
    ['config-file', 'payments', 'shadow', 'L2', sha(text)],
    ['config-file', 'search', 'shadow', 'L1', sha(text)],
  ]);
  const [first] = await events(ta, 'governance.autonomy_changed');
  t.like(first.data, { source: 'file', managed_by: 'file', by: 'config-file', request_id: null });
  t.regex(first.reason, /payments set from shadow to L2 by autonomy\.json/);
  // A service named by alerts and not in the file stays at the default, set over the API.
  await known(ta, 'orders');
  t.like(
    (await overview(ta)).services.find((s: any) => s.service === 'orders'),
    { level: 'shadow', source: 'default' },
  );
  const part = await doctorPart(ta);
  t.is(part.status, 'ok');
  t.regex(part.detail, /sets the level of 2 services \(payments L2, search L1\)/);
  t.true((await ta.app.verifyLedger()).ok);
});

test('a service in the file cannot be raised or lowered over the API (409 autonomy_file_managed); L2 stays 400; others still can', async (t) => {
  const ta = await operating(t, configDir(t, doc({ payments: 'L2', search: 'L1' })));
  const alice = await signedIn(ta, 'alice@bank.example', 'admin');
  await known(ta, 'orders');
  const head = (await ta.app.ledger.head()).seq;
  for (const [service, level] of [
    ['payments', 'off'],
    ['payments', 'L1'],
    ['search', 'shadow'],
    ['search', 'L1'],
  ] as const) {
    const res = await ta.call('POST', '/v1/autonomy', { token: alice, body: { service, level } });
    t.is(res.status, 409, `${service} → ${level}`);
    t.is(res.body.error, 'autonomy_file_managed');
    t.regex(res.body.message, /autonomy\.json/);
  }
  const l2 = await ta.call('POST', '/v1/autonomy', { token: alice, body: { service: 'search', level: 'L2' } });
  t.is(l2.status, 400);
  t.is(l2.body.error, 'level_not_allowed');
  t.is((await ta.app.ledger.head()).seq, head, 'nothing recorded');
  t.deepEqual(await levels(ta), { orders: 'shadow default', payments: 'L2 file', search: 'L1 file' });
  const lowered = await ta.call('POST', '/v1/autonomy', { token: alice, body: { service: 'orders', level: 'off' } });
  t.is(lowered.status, 202);
  t.like(
    (await overview(ta)).services.find((s: any) => s.service === 'orders'),
    { level: 'off', source: 'api' },
  );
});

test('a changed file takes effect on the next tick: raised, lowered, added, and a service no longer listed returns to the default', async (t) => {
  const first = doc({ payments: 'L2', search: 'L1' });
  const dir = configDir(t, first);
  const ta = await operating(t, dir);
  await known(ta, 'search');
  await tick(ta);
  t.is((await changes(ta)).length, 2, 'an unchanged file changes nothing');
  const second = doc({ payments: 'L1', orders: 'L2' });
  write(dir, second);
  await tick(ta);
  t.deepEqual((await changes(ta)).slice(2), [
    ['config-file', 'orders', 'shadow', 'L2', sha(second)],
    ['config-file', 'payments', 'L2', 'L1', sha(second)],
    ['config-file', 'search', 'L1', 'shadow', sha(second)],
  ]);
  t.deepEqual(await levels(ta), { orders: 'L2 file', payments: 'L1 file', search: 'shadow default' });
  const released = (await events(ta, 'governance.autonomy_changed')).at(-1);
  t.like(released.data, { managed_by: 'api' });
  t.regex(released.reason, /search is no longer in autonomy\.json: back to the policy's default shadow/);
  t.is(released.at, ta.clock.now().toISOString(), 'recorded at the injected clock');
  await tick(ta);
  await tick(ta);
  t.is((await changes(ta)).length, 5);
  // The released service is the API's again.
  const alice = await signedIn(ta, 'alice@bank.example', 'admin');
  t.is((await ta.call('POST', '/v1/autonomy', { token: alice, body: { service: 'search', level: 'off' } })).status, 202);
  t.true((await ta.app.verifyLedger()).ok);
});

test('a service the API had raised is taken over at its level, recorded; a raise pending when the file takes over cannot be approved', async (t) => {
  const dir = configDir(t, doc({}));
  const ta = await operating(t, dir);
  await known(ta, 'payments', 'search');
  const [alice, bob, carol] = [
    await signedIn(ta, 'alice@bank.example', 'admin'),
    await signedIn(ta, 'bob@bank.example', 'admin'),
    await signedIn(ta, 'carol@bank.example', 'admin'),
  ];
  t.is((await ta.call('POST', '/v1/autonomy', { token: alice, body: { service: 'payments', level: 'off' } })).status, 202);
  const raised = await ta.call('POST', '/v1/autonomy', { token: alice, body: { service: 'search', level: 'L1' } });
  const id = raised.body.pending.id as string;
  t.is((await ta.call('POST', `/v1/approvals/${id}/approve`, { token: bob, body: {} })).status, 200);

  write(dir, doc({ payments: 'off', search: 'shadow' }));
  await tick(ta);
  const [taken] = (await events(ta, 'governance.autonomy_changed')).slice(1);
  t.like(taken.data, { service: 'payments', from: 'off', to: 'off', managed_by: 'file' });
  t.regex(taken.reason, /payments is now managed by autonomy\.json at off/);
  t.deepEqual(await levels(ta), { payments: 'off file', search: 'shadow file' });

  const second = await ta.call('POST', `/v1/approvals/${id}/approve`, { token: carol, body: {} });
  t.is(second.status, 409);
  t.is(second.body.error, 'autonomy_file_managed');
  t.like(
    (await ta.call('GET', '/v1/approvals')).body.approvals.find((a: any) => a.id === id),
    { state: 'pending' },
  );
  t.deepEqual(await levels(ta), { payments: 'off file', search: 'shadow file' });
});

for (const [what, content, problem] of [
  ['not JSON', '{"services": {"payments": "L1"', /autonomy\.json is not valid JSON/],
  ['an unknown level', doc({ payments: 'L3' }), /services\.payments must be one of: off, shadow, L1, L2/],
  ['a bad service name', doc({ 'pay ments': 'L2' }), /"pay ments" is not a valid service name/],
  ['an unknown field', JSON.stringify({ services: { payments: 'L1' }, levels: {} }), /unknown field levels/],
] as const) {
  test(`a file with ${what} changes nothing: the last good file stays in force, reported once (event, log, doctor, GET)`, async (t) => {
    const good = doc({ payments: 'L2', search: 'L1' });
    const dir = configDir(t, good);
    const ta = await operating(t, dir);
    write(dir, content);
    await tick(ta);
    await tick(ta);
    t.deepEqual(await levels(ta), { payments: 'L2 file', search: 'L1 file' }, 'never dropped, never lifted');
    t.is((await changes(ta)).length, 2);
    const invalid = await events(ta, 'system.autonomy_file_invalid');
    t.is(invalid.length, 1, 'once, not on every tick');
    t.is(invalid[0].actor, 'system');
    t.like(invalid[0].data, { file: 'autonomy.json', sha256: sha(content) });
    t.regex(invalid[0].reason, problem);
    t.true(ta.logs.some((l) => JSON.parse(l).level === 40 && /the last good autonomy\.json stays in force/.test(JSON.parse(l).msg)));
    const o = await overview(ta);
    t.like(o.file, { state: 'bad', sha256: sha(content) });
    t.regex(o.file.problem, problem);
    t.is(o.file.in_force.sha256, sha(good));
    const part = await doctorPart(ta);
    t.is(part.status, 'fail');
    t.regex(part.detail, problem);
    t.regex(part.detail, /the last good file \(sha256 [0-9a-f]{12}…\) stays in force for 2 services \(payments L2, search L1\)/);
    t.regex(part.fix!, /correct autonomy\.json/);
    // Corrected, it is applied on the next tick, and the report clears.
    const fixed = doc({ payments: 'L1', search: 'L1' });
    write(dir, fixed);
    await tick(ta);
    t.deepEqual(await levels(ta), { payments: 'L1 file', search: 'L1 file' });
    t.deepEqual((await changes(ta)).at(-1), ['config-file', 'payments', 'L2', 'L1', sha(fixed)]);
    t.is((await doctorPart(ta)).status, 'ok');
    t.is((await overview(ta)).file.problem, null);
    t.true((await ta.app.verifyLedger()).ok);
  });
}

test('a bad file at the first start does not stop it and grants nothing; the API still cannot set L2', async (t) => {
  const ta = await operating(t, configDir(t, doc({ payments: 'L2', search: 'fast' })));
  await known(ta, 'payments');
  t.deepEqual(await levels(ta), { payments: 'shadow default' });
  t.is((await changes(ta)).length, 0);
  t.is((await events(ta, 'system.autonomy_file_invalid')).length, 1);
  const part = await doctorPart(ta);
  t.is(part.status, 'fail');
  t.regex(part.detail, /no file grants any level/);
  const alice = await signedIn(ta, 'alice@bank.example', 'admin');
  t.is((await ta.call('POST', '/v1/autonomy', { token: alice, body: { service: 'payments', level: 'L2' } })).body.error, 'level_not_allowed');
});

test('a file that cannot be applied (the ledger refuses writes) changes nothing, says so in doctor, and is applied on a later tick', async (t) => {
  const dir = configDir(t, doc({ payments: 'L1' }));
  const ta = await operating(t, dir);
  const block =
    ENGINE === 'mysql'
      ? "create trigger block_ledger before insert on ledger_events for each row signal sqlstate '45000' set message_text = 'ledger blocked'"
      : "create trigger block_ledger before insert on ledger_events begin select raise(abort, 'ledger blocked'); end";
  await ta.app.db.raw(block);
  const text = doc({ payments: 'L2' });
  write(dir, text);
  await tick(ta);
  t.deepEqual(await levels(ta), { payments: 'L1 file' }, 'the change and its event go together, or neither');
  const part = await doctorPart(ta);
  t.is(part.status, 'fail');
  t.regex(part.detail, /autonomy\.json could not be applied: ledger_unavailable/);
  t.true(ta.logs.some((l) => JSON.parse(l).level === 50 && /could not apply autonomy\.json/.test(JSON.parse(l).msg)));
  await ta.app.db.raw('drop trigger block_ledger');
  await tick(ta);
  t.deepEqual(await levels(ta), { payments: 'L2 file' });
  t.deepEqual((await changes(ta)).at(-1), ['config-file', 'payments', 'L1', 'L2', sha(text)]);
  t.is((await doctorPart(ta)).status, 'ok');
  t.true((await ta.app.verifyLedger()).ok);
});

test("a file above the policy's ceiling for a service is refused whole; raising the ceiling lets it in on the next tick", async (t) => {
  const dir = configDir(t, doc({}));
  const ta = await operating(t, dir);
  t.is((await ta.call('PUT', '/v1/policy', { body: { ...defaultPolicy(), ceilings: { payments: 'L1' } } })).status, 200);
  const text = doc({ payments: 'L2', search: 'L1' });
  write(dir, text);
  await tick(ta);
  await tick(ta);
  t.deepEqual(await levels(ta), {});
  const [invalid, ...more] = await events(ta, 'system.autonomy_file_invalid');
  t.is(more.length, 0);
  t.regex(invalid.reason, /services\.payments is L2, above the policy's ceiling for payments \(L1\)/);
  t.is((await doctorPart(ta)).status, 'fail');
  t.is((await ta.call('PUT', '/v1/policy', { body: { ...defaultPolicy(), ceilings: { payments: 'L2' } } })).status, 200);
  await tick(ta);
  t.deepEqual(await levels(ta), { payments: 'L2 file', search: 'L1 file' });
  t.is((await doctorPart(ta)).status, 'ok');
});

test('removing the file (or SERVICE_CONFIG_DIR) withdraws every level it granted: back to the default, recorded; never lifted', async (t) => {
  const text = doc({ payments: 'L2', search: 'off' });
  const dir = configDir(t, text);
  const ta = await operating(t, dir, { keepStore: true });
  t.teardown(() => ta.store.cleanup());
  await known(ta, 'payments', 'search');
  unlinkSync(path.join(dir, 'autonomy.json'));
  await tick(ta);
  t.deepEqual(await levels(ta), { payments: 'shadow default', search: 'shadow default' });
  t.deepEqual((await changes(ta)).slice(2), [
    ['config-file', 'payments', 'L2', 'shadow', null],
    ['config-file', 'search', 'off', 'shadow', null],
  ]);
  t.like((await overview(ta)).file, { state: 'absent', sha256: null, problem: null, in_force: { sha256: null } });
  t.is((await doctorPart(ta)).status, 'ok');

  // Back with the file; then a restart without SERVICE_CONFIG_DIR releases it the same way.
  write(dir, text);
  await tick(ta);
  t.deepEqual(await levels(ta), { payments: 'L2 file', search: 'off file' });
  await ta.app.close();
  const again = await startApp(t, { store: ta.store, clock: ta.clock });
  t.deepEqual(await levels(again), { payments: 'shadow default', search: 'shadow default' });
  t.like((await overview(again)).file, { state: 'none' });
  t.is((await changes(again)).length, 8, 'granted, withdrawn, granted again, withdrawn');
  t.true((await again.app.verifyLedger()).ok);
});

test('a restart with the same file records nothing; with a changed file only the change', async (t) => {
  const text = doc({ payments: 'L2' });
  const dir = configDir(t, text);
  const clock = new TestClock('2026-06-01T00:00:00.000Z');
  const first = await operating(t, dir, { keepStore: true, clock });
  t.teardown(() => first.store.cleanup());
  const head = (await first.app.ledger.head()).seq;
  await first.app.close();
  const again = await startApp(t, { store: first.store, clock, env: { SERVICE_CONFIG_DIR: dir } });
  t.is((await again.app.ledger.head()).seq, head, 'nothing recorded');
  t.is((await changes(again)).length, 1);
  await again.app.close();
  const changed = doc({ payments: 'L1' });
  write(dir, changed);
  const third = await startApp(t, { store: first.store, clock, env: { SERVICE_CONFIG_DIR: dir } });
  t.deepEqual((await changes(third)).slice(1), [['config-file', 'payments', 'L2', 'L1', sha(changed)]]);
  t.deepEqual(await levels(third), { payments: 'L1 file' });
});

test('the action gate accepts L2 from the file: safe kinds run unasked, others need approval; the halt stops it; shadow in the file never acts', async (t) => {
  const ta = await operating(t, configDir(t, doc({ payments: 'L2', search: 'shadow' })));
  const alice = await signedIn(ta, 'alice@bank.example', 'admin');
  t.is((await ta.call('PUT', '/v1/policy', { body: { ...defaultPolicy(), safe_for_l2: ['runbook'] } })).status, 200);
  const gate = ta.app.governance.gate;
  const ask = { service: 'payments', kind: 'runbook' };
  t.is(await code(gate.authorise(undefined, ask)), 'allowed');
  t.is(await code(ta.app.db.transaction((trx) => gate.authorise(trx, ask))), 'allowed', 'inside a transaction as well');
  t.is(await code(gate.authorise(undefined, { service: 'payments', kind: 'revert' })), 'action_not_approved');
  t.is(await code(gate.authorise(undefined, { service: 'search', kind: 'runbook' })), 'autonomy_too_low');

  t.is((await ta.call('POST', '/v1/halt', { token: alice, body: { reason: 'incident review' } })).status, 200);
  t.is(await code(gate.authorise(undefined, ask)), 'halted');
  t.is(await code(ta.app.db.transaction((trx) => gate.authorise(trx, ask))), 'halted');
  await gate.idle();
  const refused = (await events(ta, 'action.refused')).filter((e) => e.data.refused === 'halted');
  t.is(refused.length, 2);
  t.like(refused[0].data, { service: 'payments', kind: 'runbook', halted_by: 'alice@bank.example', halt_reason: 'incident review' });
  t.is((await ta.call('POST', '/v1/resume', { token: alice, body: {} })).status, 200);
  t.is(await code(gate.authorise(undefined, ask)), 'allowed');
});

/** A throwaway database on the MariaDB server, shared by the apps a test starts on it. */
async function mariadbStore(t: ExecutionContext): Promise<TestStore> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  await withServer(MARIADB_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`));
  const url = new URL(MARIADB_URL);
  url.pathname = `/${name}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oncall-test-'));
  const store: TestStore = {
    dataDir,
    databaseUrl: url.toString(),
    cleanup: async () => {
      await withServer(MARIADB_URL, (db) => db.raw(`drop database if exists \`${name}\``));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  // Registered first, so it runs after the apps' own teardowns have closed them.
  t.teardown(() => store.cleanup());
  return store;
}

testNeeding(mariadbMissing, 'two host processes starting together on one MariaDB with the same file record each change once', async (t) => {
  const store = await mariadbStore(t);
  const text = doc({ payments: 'L2', search: 'L1', orders: 'off' });
  const env = { SERVICE_CONFIG_DIR: configDir(t, text) };
  const clock = new TestClock('2026-06-01T00:00:00.000Z');
  // The first start migrates; then two more hosts start at once, and a third edit lands on both.
  const one = await startApp(t, { store, clock, env });
  const [two, three] = await Promise.all([startApp(t, { store, clock, env }), startApp(t, { store, clock, env })]);
  t.is((await changes(one)).length, 3);
  const next = doc({ payments: 'L1', search: 'L1', orders: 'off' });
  write(env.SERVICE_CONFIG_DIR, next);
  await Promise.all([one.app.governance.tick(), two.app.governance.tick(), three.app.governance.tick()]);
  t.deepEqual((await changes(one)).slice(3), [['config-file', 'payments', 'L2', 'L1', sha(next)]]);
  t.true((await three.app.verifyLedger()).ok);
});

testNeeding(mariadbMissing, 'host processes reading different files: the last to change wins, the others say so in doctor, nothing flips back', async (t) => {
  const store = await mariadbStore(t);
  const clock = new TestClock('2026-06-01T00:00:00.000Z');
  const mine = doc({ payments: 'L2' });
  const theirs = doc({ payments: 'L1' });
  const dirOne = configDir(t, mine);
  const one = await startApp(t, { store, clock, env: { SERVICE_CONFIG_DIR: dirOne } });
  await makeOperating(one);
  const two = await startApp(t, { store, clock, env: { SERVICE_CONFIG_DIR: configDir(t, theirs) } });
  for (let i = 0; i < 3; i++) {
    clock.advance(10 * SECOND);
    await one.app.tick();
    await two.app.tick();
  }
  t.deepEqual(await changes(one), [
    ['config-file', 'payments', 'shadow', 'L2', sha(mine)],
    ['config-file', 'payments', 'L2', 'L1', sha(theirs)],
  ]);
  t.deepEqual(await levels(one), { payments: 'L1 file' });
  const part = await doctorPart(one);
  t.is(part.status, 'warn');
  t.regex(part.detail, /another autonomy\.json \(sha256 [0-9a-f]{12}…\) than this process reads/);
  t.is((await doctorPart(two)).status, 'ok');
  // The same file on both: settled, nothing recorded.
  write(dirOne, theirs);
  await one.app.tick();
  t.is((await changes(one)).length, 2);
  t.is((await doctorPart(one)).status, 'ok');
});
