import { readFileSync, writeFileSync } from 'node:fs';
import test from 'ava';
import { canonicalJson, entryHash, entryText, GENESIS_HASH, type StoredEntry } from '../../host/ledger/entry.ts';
import { CHECKPOINT_FILE } from '../../host/ledger/checkpoints.ts';
import { ENGINE } from '../helpers/db.ts';
import { startApp, type TestApp } from '../helpers/app.ts';

async function appendN(ta: TestApp, n: number, type = 'human.test'): Promise<void> {
  for (let i = 0; i < n; i++) await ta.app.ledger.append({ type, actor: 'tester', reason: `event ${i}`, data: { i } });
}

const rows = (ta: TestApp) => ta.app.db<StoredEntry>('ledger_events');

/** Rewrites the stored chain from `fromSeq` on so that it is internally consistent again. */
async function rehashFrom(ta: TestApp, fromSeq: number): Promise<void> {
  const all = (await rows(ta).select('*').orderBy('seq')) as StoredEntry[];
  let prev = fromSeq === 1 ? GENESIS_HASH : all.find((r) => Number(r.seq) === fromSeq - 1)!.hash;
  for (const r of all.filter((x) => Number(x.seq) >= fromSeq)) {
    const hash = entryHash(prev, entryText(r, Number(r.seq)));
    await rows(ta).where({ seq: r.seq }).update({ prev_hash: prev, hash });
    prev = hash;
  }
  const last = all[all.length - 1]!;
  await ta.app.db('ledger_head').where({ id: 1 }).update({ seq: last.seq, hash: prev });
}

test('the stored entry text is exactly the RFC 8785 canonical JSON of the entry', (t) => {
  const data = { z: [1, 2.5, 1e21, -0, 'é', { b: null, a: true }], a: 'line\nbreak "quoted" \u2028', é: 'ü' };
  const entry = {
    seq: 7,
    at: '2026-06-01T00:00:00.000Z',
    type: 'human.deploy',
    actor: 'ops@bank.example',
    reason: 'snowman ☃',
    data: canonicalJson(data),
    trace: 'ep-1',
  };
  t.is(entryText(entry, entry.seq), canonicalJson({ ...entry, data }));
  t.is(entryText({ ...entry, trace: null }, entry.seq), canonicalJson({ ...entry, data, trace: null }));
});

test('each hash chains to the one before, starting from 64 zeros, with the ledger:v1 domain tag', async (t) => {
  const ta = await startApp(t);
  await appendN(ta, 3);
  const all = (await rows(ta).select('*').orderBy('seq')) as StoredEntry[];
  t.deepEqual(
    all.map((r) => Number(r.seq)),
    [1, 2, 3],
  );
  t.is(all[0]!.prev_hash, GENESIS_HASH);
  t.is(all[1]!.prev_hash, all[0]!.hash);
  const { createHash } = await import('node:crypto');
  const expected = createHash('sha256')
    .update('ledger:v1' + all[0]!.prev_hash + entryText(all[0]!, 1))
    .digest('hex');
  t.is(all[0]!.hash, expected);
});

test('8 concurrent writers × 500 events leave 4000 distinct consecutive seqs and a chain that verifies', async (t) => {
  const ta = await startApp(t);
  const seqs: number[] = [];
  await Promise.all(
    Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; i < 500; i++) seqs.push((await ta.app.ledger.append({ type: 'human.load', actor: `writer-${w}`, data: { i } })).seq);
    }),
  );
  t.is(new Set(seqs).size, 4000);
  t.deepEqual(
    [...seqs].sort((a, b) => a - b),
    Array.from({ length: 4000 }, (_, i) => i + 1),
  );
  const report = await ta.app.verifyLedger();
  t.true(report.ok);
  t.is(report.checked, 4000);
  t.is(report.head.seq, 4000);
});

test('verify answers ok with the head on an intact chain, and on an empty one', async (t) => {
  const ta = await startApp(t);
  const empty = await ta.call('GET', '/v1/ledger/verify');
  t.is(empty.status, 200);
  t.deepEqual(empty.body, {
    ok: true,
    checked: 0,
    first_bad_seq: null,
    head: { seq: 0, hash: GENESIS_HASH },
    checkpoint: null,
    problem: null,
    range: null,
    expected: null,
  });
  await appendN(ta, 5);
  const res = await ta.call('GET', '/v1/ledger/verify');
  t.is(res.body.ok, true);
  t.is(res.body.checked, 5);
  t.is(res.body.head.seq, 5);
});

test('editing a stored row makes verify fail at that seq', async (t) => {
  const ta = await startApp(t);
  await appendN(ta, 5);
  await rows(ta).where({ seq: 3 }).update({ reason: 'nothing to see here' });
  const report = await ta.app.verifyLedger();
  t.false(report.ok);
  t.is(report.first_bad_seq, 3);
  t.is(report.problem, 'hash_mismatch');
  t.is(report.checked, 2);
});

test('re-serialising the stored data without changing its meaning still breaks the hash', async (t) => {
  const ta = await startApp(t);
  await ta.app.ledger.append({ type: 'human.test', actor: 'a', data: { a: 1, b: 2 } });
  await rows(ta).where({ seq: 1 }).update({ data: '{"b":2,"a":1}' });
  const report = await ta.app.verifyLedger();
  t.is(report.first_bad_seq, 1);
});

test('deleting a row in the middle makes verify fail at the missing seq', async (t) => {
  const ta = await startApp(t);
  await appendN(ta, 5);
  await rows(ta).where({ seq: 3 }).delete();
  const report = await ta.app.verifyLedger();
  t.false(report.ok);
  t.is(report.first_bad_seq, 3);
  t.is(report.problem, 'seq_gap');
});

test('reordering two rows makes verify fail at the first of them', async (t) => {
  const ta = await startApp(t);
  await appendN(ta, 5);
  const [two, three] = (await rows(ta).select('*').whereIn('seq', [2, 3]).orderBy('seq')) as StoredEntry[];
  await rows(ta)
    .where({ seq: 2 })
    .update({ ...three!, seq: 2 });
  await rows(ta)
    .where({ seq: 3 })
    .update({ ...two!, seq: 3 });
  const report = await ta.app.verifyLedger();
  t.false(report.ok);
  t.is(report.first_bad_seq, 2);
});

test('deleting the newest row is caught by the stored head', async (t) => {
  const ta = await startApp(t);
  await appendN(ta, 5);
  await rows(ta).where({ seq: 5 }).delete();
  const report = await ta.app.verifyLedger();
  t.false(report.ok);
  t.is(report.first_bad_seq, 5);
  t.is(report.problem, 'head_mismatch');
});

test('a checkpoint is written after 1,000 events, and after 60 s of the injected clock when the head moved', async (t) => {
  const ta = await startApp(t);
  await appendN(ta, 999);
  t.is(await ta.app.checkpoints.maybeWrite(), null);
  await appendN(ta, 1);
  await ta.app.checkpoints.maybeWrite();
  t.is(Number((await ta.app.db('ledger_checkpoints').max({ m: 'seq' }).first())?.m), 1000, 'the 1,000th commit wrote it');
  await appendN(ta, 1);
  ta.clock.advance(59_000);
  await ta.app.tick();
  t.is(Number((await ta.app.db('ledger_checkpoints').max({ m: 'seq' }).first())?.m), 1000);
  ta.clock.advance(1_000);
  await ta.app.tick();
  t.is(Number((await ta.app.db('ledger_checkpoints').max({ m: 'seq' }).first())?.m), 1001);
  ta.clock.advance(120_000);
  await ta.app.tick();
  t.is(Number((await ta.app.db('ledger_checkpoints').count({ n: '*' }).first())?.n), 2, 'no checkpoint when the head has not moved');
  const lines = readFileSync(`${ta.store.dataDir}/${CHECKPOINT_FILE}`, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.deepEqual(
    lines.map((l) => l.seq),
    [1000, 1001],
  );
  t.is(lines[0].key, ta.app.identity.fingerprint);
  const report = await ta.app.verifyLedger();
  t.true(report.ok);
  t.is(report.checkpoint?.seq, 1001);
});

async function withCheckpointAt(ta: TestApp, n: number): Promise<void> {
  await appendN(ta, n);
  ta.clock.advance(60_000);
  await ta.app.tick();
}

test('a truncated chain fails verify even when its head is fixed up to match', async (t) => {
  const ta = await startApp(t);
  await withCheckpointAt(ta, 6);
  await rows(ta).where('seq', '>', 4).delete();
  const four = (await rows(ta).where({ seq: 4 }).first()) as StoredEntry;
  await ta.app.db('ledger_head').where({ id: 1 }).update({ seq: 4, hash: four.hash });
  const report = await ta.app.verifyLedger();
  t.false(report.ok);
  t.is(report.problem, 'truncated');
  t.is(report.first_bad_seq, 5);
});

test('a truncation that also deletes the database checkpoints is caught by the checkpoint file', async (t) => {
  const ta = await startApp(t);
  await withCheckpointAt(ta, 6);
  await rows(ta).where('seq', '>', 4).delete();
  await ta.app.db('ledger_checkpoints').delete();
  const four = (await rows(ta).where({ seq: 4 }).first()) as StoredEntry;
  await ta.app.db('ledger_head').where({ id: 1 }).update({ seq: 4, hash: four.hash });
  const report = await ta.app.verifyLedger();
  t.false(report.ok);
  t.is(report.first_bad_seq, 5);
});

test('a wholly rewritten but self-consistent chain fails at the seq after the last checkpoint it still matches', async (t) => {
  const ta = await startApp(t);
  await withCheckpointAt(ta, 3);
  await withCheckpointAt(ta, 3);
  await rows(ta).where({ seq: 5 }).update({ reason: 'rewritten' });
  await rehashFrom(ta, 5);
  const report = await ta.app.verifyLedger();
  t.false(report.ok);
  t.is(report.problem, 'checkpoint_mismatch');
  t.is(report.first_bad_seq, 4);
  t.is(report.checkpoint?.seq, 3);
});

test('a forged checkpoint line in the file makes verify fail', async (t) => {
  const ta = await startApp(t);
  await withCheckpointAt(ta, 3);
  const file = `${ta.store.dataDir}/${CHECKPOINT_FILE}`;
  const line = JSON.parse(readFileSync(file, 'utf8').trim()) as { hash: string };
  writeFileSync(file, JSON.stringify({ ...line, hash: 'f'.repeat(64) }) + '\n', { flag: 'a' });
  const report = await ta.app.verifyLedger();
  t.false(report.ok);
  t.is(report.problem, 'checkpoint_invalid');
});

test('secrets in caller data never reach the ledger', async (t) => {
  const ta = await startApp(t);
  await ta.app.ledger.append({
    type: 'human.deploy',
    actor: 'ops',
    data: { password: 'hunter2', nested: { api_key: 'k-123', keep: 'yes' }, list: [{ token: 't-1' }] },
  });
  const row = (await rows(ta).where({ seq: 1 }).first()) as StoredEntry;
  t.false(/hunter2|k-123|t-1/.test(row.data));
  t.deepEqual(JSON.parse(row.data), { list: [{ token: '[redacted]' }], nested: { api_key: '[redacted]', keep: 'yes' }, password: '[redacted]' });
});

test('an audited change is not made when its ledger event cannot be written (fail closed)', async (t) => {
  const ta = await startApp(t);
  const block =
    ENGINE === 'mysql'
      ? "create trigger block_ledger before insert on ledger_events for each row signal sqlstate '45000' set message_text = 'ledger blocked'"
      : "create trigger block_ledger before insert on ledger_events begin select raise(abort, 'ledger blocked'); end";
  await ta.app.db.raw(block);
  const { signLicence } = await import('../helpers/app.ts');
  const res = await ta.call('POST', '/v1/licence', { body: { licence: signLicence() } });
  t.is(res.status, 503);
  t.deepEqual(res.body, { error: 'ledger_unavailable' });
  t.is(Number((await ta.app.db('licences').count({ n: '*' }).first())?.n), 0, 'the licence was not installed');
  t.is((await ta.call('GET', '/v1/status')).body.mode, 'setup');
  const ev = await ta.call('POST', '/v1/events', { token: (await import('../helpers/app.ts')).INGEST_TOKEN, body: { type: 'human.deploy', actor: 'ops' } });
  t.is(ev.status, 503);
  t.deepEqual(ev.body, { error: 'ledger_unavailable' });
  await ta.app.db.raw('drop trigger block_ledger');
  t.is((await ta.call('POST', '/v1/licence', { body: { licence: signLicence() } })).status, 200);
  t.true((await ta.app.verifyLedger()).ok);
});

if (ENGINE === 'mysql') {
  test('on MySQL, appends carry on after the server drops every connection', async (t) => {
    const ta = await startApp(t);
    await appendN(ta, 3);
    const [rows] = (await ta.app.db.raw('select id from information_schema.processlist where db = database() and id <> connection_id()')) as [
      Array<{ id: number }>,
    ];
    t.true(rows.length > 0);
    for (const r of rows) await ta.app.db.raw('kill ?', [r.id]).catch(() => {});
    await appendN(ta, 3);
    t.is((await ta.app.ledger.head()).seq, 6);
    t.true((await ta.app.verifyLedger()).ok);
  });
}
