import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TestClock } from '../../host/clock.ts';
import { CHECKPOINT_FILE } from '../../host/ledger/checkpoints.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { MARIADB_URL, mariadbTest, withServer } from '../helpers/db.ts';

const dbCheckpointSeqs = async (ta: TestApp) =>
  ((await ta.app.db('ledger_checkpoints').select('seq').orderBy('seq')) as Array<{ seq: number }>).map((r) => Number(r.seq));
const fileLines = (ta: TestApp) =>
  readFileSync(`${ta.store.dataDir}/${CHECKPOINT_FILE}`, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { seq: number });

/**
 * Two hosts on one MariaDB database, each with its own data directory (its own checkpoint file),
 * taking turns to append: each writes checkpoints by its own count, and the chain verifies as
 * seen from either. Always on MariaDB, since SQLite has no second host.
 */
await mariadbTest('two hosts on one database, each with its own checkpoint file, leave checkpoints that verify from either host', async (t) => {
  t.timeout(300_000);
  const name = `t_${randomBytes(6).toString('hex')}`;
  await withServer(MARIADB_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`));
  const url = new URL(MARIADB_URL);
  url.pathname = `/${name}`;
  const dirs = [0, 1].map(() => mkdtempSync(path.join(tmpdir(), 'oncall-ckpt-')));
  t.teardown(async () => {
    await withServer(MARIADB_URL, (db) => db.raw(`drop database if exists \`${name}\``));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const clock = new TestClock('2026-06-01T00:00:00.000Z');
  const env = { SERVICE_SECRET_KEY: 'secret-key-shared-by-both-hosts-0123456789' };
  const hosts: TestApp[] = [];
  for (const dir of dirs) hosts.push(await startApp(t, { clock, env, store: { dataDir: dir, databaseUrl: url.toString(), cleanup: async () => {} } }));
  const [a, b] = hosts as [TestApp, TestApp];

  // Turns of 700 events, so neither host's commits line up with the other's checkpoints.
  for (let turn = 0; turn < 12; turn++) {
    const host = turn % 2 === 0 ? a : b;
    await Promise.all(
      Array.from({ length: 700 }, (_, i) => host.app.ledger.append({ type: 'human.test', actor: `host ${turn % 2}`, reason: `turn ${turn} event ${i}` })),
    );
  }
  await Promise.all(hosts.map((h) => h.app.checkpoints.idle()));
  const seqs = await dbCheckpointSeqs(a);
  const widest = Math.max(...seqs.map((s, i) => s - (i === 0 ? 0 : seqs[i - 1]!)), 8_400 - seqs[seqs.length - 1]!);
  t.true(widest < 2_000, `checkpoints at ${seqs.join(', ')}`);
  for (const h of hosts) t.true(fileLines(h).length > 0, 'each host wrote checkpoints to its own file');
  for (const h of hosts) t.like(await h.app.verifyLedger(), { ok: true, checked: 8_400, problem: null }, 'as seen from each host');

  clock.advance(60_000);
  for (const h of hosts) await h.app.tick();
  const latest = (await a.call('GET', '/v1/status', { token: null })).body.ledger_checkpoint;
  t.is(latest.seq, 8_400, 'the tick checkpoints the newest events');
  t.deepEqual((await b.call('GET', '/v1/status', { token: null })).body.ledger_checkpoint, latest, 'whichever host wrote it');
  for (const h of hosts) t.like(await h.app.verifyLedger(), { ok: true, checkpoint: { seq: 8_400 } });
});
