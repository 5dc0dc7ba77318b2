// Issue 22, item 6: checkpoints leave the box. Each signed checkpoint also goes to the witnesses
// the install configures (a webhook, Debian's rsyslog over UDP and TCP), the digest e-mail
// carries the latest, and verify reports checkpoint_missing for a chain longer than one
// checkpoint interval with none, whatever the tolerance: the squash attack is detected.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import test, { type ExecutionContext } from 'ava';
import { CHECKPOINT_EVERY_EVENTS, CHECKPOINT_FILE, checkpointMessage } from '../../host/ledger/checkpoints.ts';
import { entryHash, entryText, GENESIS_HASH, type StoredEntry } from '../../host/ledger/entry.ts';
import { parseWitnesses } from '../../host/ledger/witness.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { seedDay, seededApp } from '../helpers/digest-seed.ts';
import { testNeeding } from '../helpers/needs.ts';
import { rsyslogMissing, startRsyslog } from '../helpers/rsyslog.ts';

/** Appends `n` events a thousand per commit, as the service does, and waits for their checkpoints (and witnesses). */
async function appendMany(ta: TestApp, n: number): Promise<void> {
  for (let done = 0; done < n; done += CHECKPOINT_EVERY_EVENTS) {
    const size = Math.min(CHECKPOINT_EVERY_EVENTS, n - done);
    await Promise.all(
      Array.from({ length: size }, (_, i) => ta.app.ledger.append({ type: 'human.test', actor: 'tester', reason: `event ${done + i}`, data: { i: done + i } })),
    );
  }
  await ta.app.checkpoints.idle();
}

interface Received {
  type: string;
  checkpoint: { seq: number; hash: string; at: string; signature: string; key: string };
}

/** A webhook witness on loopback: records every body; answers `status()`. */
async function webhookWitness(t: ExecutionContext, status: () => number = () => 204): Promise<{ url: string; got: Received[] }> {
  const got: Received[] = [];
  const srv = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const code = status();
      if (code < 300) got.push(JSON.parse(body) as Received);
      res.statusCode = code;
      res.end();
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))));
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/witness?token=w1tness-secret`, got };
}

/**
 * The squash: what someone with write access to the database and the data directory does to
 * hide history. The chain is replaced by its first `keep` entries re-hashed (a consistent,
 * shorter chain), the head row follows, and both copies of the checkpoints are deleted.
 */
async function squash(ta: TestApp, keep: number): Promise<void> {
  const rows = (await ta.app.db('ledger_events').select('*').orderBy('seq').limit(keep)) as StoredEntry[];
  let prev = GENESIS_HASH;
  const rewritten = rows.map((r) => {
    const seq = Number(r.seq);
    const entry = { ...r, seq, reason: seq === 1 ? 'nothing happened here' : r.reason };
    const hash = entryHash(prev, entryText(entry, seq));
    const out = { ...entry, prev_hash: prev, hash };
    prev = hash;
    return out;
  });
  await ta.app.db.transaction(async (trx) => {
    await trx('ledger_events').delete();
    for (let i = 0; i < rewritten.length; i += 200) await trx('ledger_events').insert(rewritten.slice(i, i + 200));
    await trx('ledger_head').where({ id: 1 }).update({ seq: rewritten.length, hash: prev });
    await trx('ledger_checkpoints').delete();
  });
  rmSync(`${ta.store.dataDir}/${CHECKPOINT_FILE}`, { force: true });
}

test('SERVICE_LEDGER_WITNESS: webhooks and syslog over UDP or TCP; anything else stops the start naming it', (t) => {
  const ok = parseWitnesses('https://witness.bank.example/cp?token=x, syslog://logs.bank.example, syslog+tcp://10.0.0.5:6514');
  t.deepEqual(ok.problems, []);
  t.deepEqual(
    ok.targets.map((w) => w.shown),
    ['https://witness.bank.example', 'syslog://logs.bank.example', 'syslog+tcp://10.0.0.5:6514'],
    'shown as the origin only (a token may be in the path or query)',
  );
  t.like(ok.targets[1], { kind: 'syslog', transport: 'udp', port: 514 });
  t.deepEqual(parseWitnesses(null), { targets: [], problems: [] });
  t.regex(parseWitnesses('ftp://x').problems[0]!, /"ftp:" is not a witness kind/);
  t.regex(parseWitnesses('not an address').problems[0]!, /is not an address/);
});

test('the squash attack: history collapsed into 2,500 re-hashed events, head updated, checkpoints deleted, fails verify with checkpoint_missing', async (t) => {
  t.timeout(120_000);
  const ta = await startApp(t);
  await appendMany(ta, 6_000);
  t.like(await ta.app.verifyLedger(), { ok: true, checkpoint: { seq: 6_000 } });
  await squash(ta, 2_500);
  // Within the 3,000 a healthy ledger may leave between two checkpoints, but with none at all.
  t.like(await ta.app.verifyLedger(), {
    ok: false,
    checked: 2_500,
    problem: 'checkpoint_missing',
    first_bad_seq: 1,
    range: { from_seq: 1, to_seq: 2_500 },
    checkpoint: null,
  });
});

test('a squash into at most one interval verifies on its own; the checkpoint the witness kept shows it', async (t) => {
  t.timeout(120_000);
  const witness = await webhookWitness(t);
  const ta = await startApp(t, { env: { SERVICE_LEDGER_WITNESS: witness.url } });
  await appendMany(ta, 3_000);
  const kept = witness.got.at(-1)!.checkpoint;
  t.is(kept.seq, 3_000);
  await squash(ta, 900);
  // What no check on this machine can see: the attacker controls everything verify reads.
  t.like(await ta.app.verifyLedger(), { ok: true, checked: 900 });
  // The witness's copy: the ledger no longer reaches seq 3,000.
  t.like(await ta.app.verifyLedger({ expect: { seq: kept.seq, hash: kept.hash } }), { ok: false, problem: 'truncated' });
  // And an earlier one it kept: the entry there has another hash now.
  const early = witness.got.find((w) => w.checkpoint.seq === 1_000)!.checkpoint;
  await appendMany(ta, 200);
  t.like(await ta.app.verifyLedger({ expect: { seq: early.seq, hash: early.hash } }), { ok: false, problem: 'expected_hash_mismatch' });
});

test('each signed checkpoint is sent to the webhook witness, signed by the install; a failed send is retried with the latest on the tick', async (t) => {
  let answer = 204;
  const witness = await webhookWitness(t, () => answer);
  const ta = await startApp(t, { env: { SERVICE_LEDGER_WITNESS: witness.url } });
  await appendMany(ta, 2_000);
  t.deepEqual(
    witness.got.map((w) => w.checkpoint.seq),
    [1_000, 2_000],
  );
  for (const { type, checkpoint: cp } of witness.got) {
    t.is(type, 'ledger.checkpoint');
    t.is(cp.key, ta.app.identity.fingerprint);
    t.true(ta.app.identity.verify(checkpointMessage(cp), cp.signature), 'the signature verifies with the install key');
  }
  answer = 503;
  await appendMany(ta, 1_000);
  t.is(witness.got.length, 2, 'the witness refused seq 3,000');
  t.true(ta.logs.some((l) => l.includes('ledger checkpoint not delivered to its witness') && l.includes('http://127.0.0.1')));
  t.false(
    ta.logs.some((l) => l.includes('w1tness-secret')),
    'the witness address is logged as its origin only',
  );
  const witnessPart = async () =>
    ((await ta.call('GET', '/v1/doctor?fresh=1')).body.components as Array<{ name: string; status: string; detail: string }>).find(
      (c) => c.name === 'witness',
    )!;
  const failing = await witnessPart();
  t.is(failing.status, 'warn');
  t.regex(failing.detail, /not delivered to http:\/\/127\.0\.0\.1:\d+ \(last delivered seq 2000\)/);
  t.false(failing.detail.includes('w1tness-secret'), 'the doctor names the witness by its origin only');
  answer = 204;
  await ta.app.tick();
  await ta.app.checkpoints.idle();
  t.is(witness.got.at(-1)!.checkpoint.seq, 3_000, 'the tick sent the latest');
  t.is((await witnessPart()).status, 'ok');
  await ta.app.tick();
  await ta.app.checkpoints.idle();
  t.is(witness.got.length, 3, 'and only once');
});

testNeeding(rsyslogMissing, "each checkpoint reaches Debian's rsyslog over UDP and over TCP as an RFC 5424 message", async (t) => {
  const rs = await startRsyslog(t);
  const ta = await startApp(t, { env: { SERVICE_LEDGER_WITNESS: `syslog://127.0.0.1:${rs.udp},syslog+tcp://127.0.0.1:${rs.tcp}` } });
  await appendMany(ta, 1_000);
  const cp = (await ta.app.checkpoints.latestSigned())!;
  const deadline = Date.now() + 10_000;
  while (rs.lines().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const lines = rs.lines();
  t.is(lines.length, 2, lines.join('\n'));
  for (const line of lines) {
    t.regex(line, /^<109>1 \S+ \S+ oncall \d+ checkpoint - ledger checkpoint \{/);
    const body = JSON.parse(line.slice(line.indexOf('{'))) as Received;
    t.deepEqual(body, { type: 'ledger.checkpoint', checkpoint: cp });
  }
});

test('the digest e-mail carries the newest signed checkpoint whole', async (t) => {
  const { ta, smtp } = await seededApp(t);
  await seedDay(ta);
  await appendMany(ta, 1_000);
  const cp = (await ta.app.checkpoints.latestSigned())!;
  t.truthy(cp);
  ta.clock.set('2026-06-02T06:00:00.000Z');
  t.like(await ta.app.digest.mailer.sendFor(ta.clock.now()), { sent: true, ok: true });
  const mail = smtp.messages.find((m) => m.subject.startsWith('On-call digest'))!;
  t.true(mail.text.includes('## Ledger checkpoint'));
  t.true(mail.text.includes(JSON.stringify({ seq: cp.seq, hash: cp.hash, at: cp.at, signature: cp.signature, key: cp.key })));
});
