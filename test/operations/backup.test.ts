// oncall backup / oncall restore (issue 24). SQLite: a consistent copy while the service takes
// alerts in, restored into a fresh data directory and served with the same head. MySQL: the
// documented recipe (oncall backup for the key and checkpoints, then mysqldump
// --single-transaction), loaded into a fresh database and restored. Refusals: a running
// service, an install already there, a broken or foreign file, a newer version's backup.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { create, extract } from 'tar';
import { LeaseRepo } from '../../host/schedule/lease.repo.ts';
import { openDb } from '../../host/storage/db.ts';
import { ADMIN_TOKEN, INGEST_TOKEN, makeOperating, signLicence, startApp, testVendor } from '../helpers/app.ts';
import { json, oncall } from '../helpers/cli.ts';
import { MARIADB_URL, withServer } from '../helpers/db.ts';
import { testNeeding } from '../helpers/needs.ts';
import { startServiceProcess, type ServiceProcess } from '../helpers/service-process.ts';

// Asked before any test is declared: ava takes declarations only until the file's first pause.
const mariadbMissing = await withServer(MARIADB_URL, (db) => db.raw('select 1')).then(
  () => null,
  (e: Error) => `MariaDB at ${new URL(MARIADB_URL).host} not reachable: ${e.message}`,
);
const dumpMissing =
  spawnSync('mariadb-dump', ['--version'], { stdio: 'ignore' }).status === 0 ? null : 'mariadb-dump is not installed (apt-get install mariadb-client)';

function tempDir(t: ExecutionContext, prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The SERVICE_* variables of a SQLite install in `dataDir`. */
const sqliteEnv = (dataDir: string): Record<string, string> => ({
  SERVICE_DATA_DIR: dataDir,
  SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
  SERVICE_INGEST_TOKEN: INGEST_TOKEN,
  SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
});

async function call(s: ServiceProcess, method: string, p: string, body?: unknown, token = ADMIN_TOKEN): Promise<{ status: number; body: any }> {
  const res = await fetch(s.base + p, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : JSON.parse(text) };
}

async function operating(s: ServiceProcess): Promise<void> {
  if ((await call(s, 'POST', '/v1/licence', { licence: signLicence() })).status !== 200) throw new Error('licence');
  if ((await call(s, 'POST', '/v1/auth/bootstrap', { email: 'owner@bank.example', name: 'Owner' })).status !== 201) throw new Error('bootstrap');
}

/** The hash the served ledger holds at `seq`. */
async function hashAt(s: ServiceProcess, seq: number): Promise<string | undefined> {
  return (await call(s, 'GET', `/v1/ledger?after_seq=${seq - 1}&order=asc&limit=1`)).body.events[0]?.hash;
}

test('a backup taken while the service takes alerts in restores into a fresh data directory, verifies, and the restored service serves the same head', async (t) => {
  const dataDir = tempDir(t, 'oncall-live-');
  const service = await startServiceProcess(t, sqliteEnv(dataDir));
  await operating(service);

  // Eight pushers, each alert new, until told to stop.
  let stop = false;
  let acknowledged = 0;
  const pushers = Array.from({ length: 8 }, async (_, w) => {
    for (let i = 0; !stop; i++) {
      const r = await call(service, 'POST', '/v1/alerts/generic', { name: 'Load', service: 'payments', status: 'firing', id: `w${w}-${i}` }, INGEST_TOKEN);
      if (r.status !== 202) throw new Error(`push answered ${r.status}`);
      acknowledged++;
    }
  });
  while (acknowledged < 200) await new Promise((r) => setTimeout(r, 20)); // load under way, not a rule
  const before = acknowledged;
  const backups = tempDir(t, 'oncall-backups-');
  const file = path.join(backups, 'oncall.tar.gz');
  const made = await oncall(['backup', file, '--json'], sqliteEnv(dataDir));
  const during = acknowledged - before;
  stop = true;
  await Promise.all(pushers);
  t.is(made.code, 0, made.stderr + made.stdout);
  t.true(during > 0, 'alerts kept being taken in while the backup ran');
  const backup = json(made);
  t.like(backup, { ok: true, engine: 'sqlite', verify: { ok: true } });
  for (const f of ['secret.key', 'service.db']) t.true(backup.files.includes(f), f);
  t.is(statSync(file).mode & 0o777, 0o600, 'the file holds the secret key: owner only');
  t.deepEqual(
    readdirSync(backups).filter((f) => f !== 'oncall.tar.gz'),
    [],
    'nothing left beside it',
  );

  // Restored into a fresh directory: verified before and after, at the head the backup names.
  const fresh = path.join(tempDir(t, 'oncall-restored-'), 'data');
  const restored = await oncall(['restore', file, '--json'], sqliteEnv(fresh));
  t.is(restored.code, 0, restored.stderr + restored.stdout);
  const r = json(restored);
  t.deepEqual(r.head, backup.head);
  t.like(r, { ok: true, before: { ok: true }, after: { ok: true } });
  t.is(r.after.checked, backup.head.seq);
  const text = await oncall(['restore', file], sqliteEnv(path.join(tempDir(t, 'oncall-restored-'), 'data')));
  t.regex(text.stdout, new RegExp(`^restored head seq ${backup.head.seq} hash ${backup.head.hash} into `, 'm'));

  // Every alert acknowledged before the backup started is in it.
  const db = openDb({ databaseUrl: null, dataDir: fresh });
  const pushed = (await db('ledger_events').where({ type: 'signal.pushed' }).count({ n: '*' }).first()) as { n: number };
  await db.destroy();
  t.true(Number(pushed.n) >= before, `${pushed.n} pushes in the backup, ${before} acknowledged before it began`);

  const second = await startServiceProcess(t, sqliteEnv(fresh));
  t.is(await hashAt(second, backup.head.seq), backup.head.hash, 'the restored service serves the head the backup names');
  t.true((await call(second, 'GET', '/v1/ledger/verify')).body.ok);
  t.is((await call(second, 'GET', '/v1/status')).body.mode, 'operating');
  t.is(await second.stop(), 0);
  t.is(await service.stop(), 0);
});

test('restore refuses while the service runs on the data directory, and over an install unless --replace, which moves it aside', async (t) => {
  const ta = await startApp(t, { manualTick: true, env: { SERVICE_DATABASE_URL: undefined } });
  await makeOperating(ta);
  const env = { ...sqliteEnv(ta.store.dataDir), SERVICE_DATABASE_URL: undefined };
  const file = path.join(tempDir(t, 'oncall-backups-'), 'b.tar.gz');
  t.is((await oncall(['backup', file], env)).code, 0);
  const again = await oncall(['backup', file], env);
  t.is(again.code, 2);
  t.regex(again.stderr, /already exists: choose another name/);

  // The test's own process serves this data directory.
  const running = await oncall(['restore', file, '--json'], env);
  t.is(running.code, 1);
  t.like(json(running), { ok: false, error: 'service_running' });
  await ta.app.close();

  const refused = await oncall(['restore', file, '--json'], env);
  t.is(refused.code, 1);
  t.like(json(refused), { error: 'data_dir_in_use' });
  t.regex(json(refused).message, /already holds an install \(service\.db.*secret\.key.*\): add --replace/);

  const replaced = await oncall(['restore', file, '--replace', '--json'], env);
  t.is(replaced.code, 0, replaced.stderr);
  const aside = json(replaced).moved_aside as string;
  t.true(existsSync(path.join(aside, 'service.db')) && existsSync(path.join(aside, 'secret.key')), 'moved, not deleted');
});

test('a backup whose ledger was altered, a file that is not a backup, and a newer version’s backup are refused, and nothing is restored', async (t) => {
  const ta = await startApp(t, { manualTick: true, env: { SERVICE_DATABASE_URL: undefined } });
  await makeOperating(ta);
  for (let i = 0; i < 5; i++) await ta.app.ledger.append({ type: 'human.note', actor: 'test', reason: `note ${i}`, data: {} });
  const env = { ...sqliteEnv(ta.store.dataDir), SERVICE_DATABASE_URL: undefined };
  const dir = tempDir(t, 'oncall-backups-');
  const file = path.join(dir, 'b.tar.gz');
  t.is((await oncall(['backup', file], env)).code, 0);
  await ta.app.close();

  /** The backup unpacked, changed by `change`, packed again as `name`. */
  const altered = async (name: string, change: (d: string) => void | Promise<void>): Promise<string> => {
    const d = mkdtempSync(path.join(dir, 'x-'));
    await extract({ file, cwd: d });
    await change(d);
    const out = path.join(dir, name);
    await create({ gzip: true, file: out, cwd: d }, readdirSync(d));
    return out;
  };
  const fresh = () => path.join(tempDir(t, 'oncall-restored-'), 'data');

  const edited = await altered('edited.tar.gz', async (d) => {
    const db = openDb({ databaseUrl: null, dataDir: d });
    await db('ledger_events').where({ seq: 3 }).update({ reason: 'rewritten' });
    await db.destroy();
    for (const side of ['service.db-wal', 'service.db-shm']) rmSync(path.join(d, side), { force: true });
  });
  const target = fresh();
  const broken = await oncall(['restore', edited, '--json'], sqliteEnv(target));
  t.is(broken.code, 1);
  t.like(json(broken), { error: 'backup_broken' });
  t.regex(json(broken).message, /an event was changed after it was written/);
  t.deepEqual(
    readdirSync(target).filter((f) => f !== 'service.pid'),
    [],
    'nothing was restored',
  );

  const newer = await altered('newer.tar.gz', (d) => {
    const m = JSON.parse(readFileSync(path.join(d, 'manifest.json'), 'utf8'));
    m.migrations.push('209912312359_add_future_thing.ts');
    m.service_version = '9.0.0';
    writeFileSync(path.join(d, 'manifest.json'), JSON.stringify(m));
  });
  const refusedNewer = await oncall(['restore', newer, '--json'], sqliteEnv(fresh()));
  t.like(json(refusedNewer), { error: 'backup_newer' });
  t.regex(json(refusedNewer).message, /made by oncall 9\.0\.0/);

  const notBackup = path.join(dir, 'notes.tar.gz');
  writeFileSync(path.join(dir, 'notes.txt'), 'hello');
  await create({ gzip: true, file: notBackup, cwd: dir }, ['notes.txt']);
  const foreign = await oncall(['restore', notBackup, '--json'], sqliteEnv(fresh()));
  t.is(foreign.code, 2);
  t.like(json(foreign), { error: 'not_a_backup' });
  const garbage = path.join(dir, 'garbage.tar.gz');
  writeFileSync(garbage, randomBytes(200));
  t.like(json(await oncall(['restore', garbage, '--json'], sqliteEnv(fresh()))), { error: 'not_a_backup' });
});

testNeeding(
  mariadbMissing ?? dumpMissing,
  'MySQL: oncall backup with mysqldump --single-transaction, loaded into a fresh database, restores and verifies; a dump without the backup’s head, or a host still running, is refused',
  async (t) => {
    const created: string[] = [];
    const database = async () => {
      const name = `t_${randomBytes(6).toString('hex')}`;
      await withServer(MARIADB_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`));
      created.push(name);
      const url = new URL(MARIADB_URL);
      url.pathname = `/${name}`;
      return { name, url: url.toString() };
    };
    t.teardown(async () => {
      for (const n of created) await withServer(MARIADB_URL, (db) => db.raw(`drop database if exists \`${n}\``));
    });
    const server = new URL(MARIADB_URL);
    const client = ['--protocol=tcp', `-h${server.hostname}`, `-P${server.port || '3306'}`, `-u${decodeURIComponent(server.username) || 'root'}`];
    if (server.password !== '') client.push(`-p${decodeURIComponent(server.password)}`);

    const live = await database();
    const dataDir = tempDir(t, 'oncall-mysql-');
    const store = { dataDir, databaseUrl: live.url, cleanup: async () => undefined };
    const ta = await startApp(t, { store, manualTick: true });
    await makeOperating(ta);
    for (let i = 0; i < 20; i++) await ta.app.ledger.append({ type: 'human.note', actor: 'test', reason: `before ${i}`, data: {} });
    const env = { ...sqliteEnv(dataDir), SERVICE_DATABASE_URL: live.url };

    // The recipe of docs/operations.md: the files first, then the database.
    const dir = tempDir(t, 'oncall-backups-');
    const files = path.join(dir, 'oncall-files.tar.gz');
    const made = await oncall(['backup', files, '--json'], env);
    t.is(made.code, 0, made.stderr + made.stdout);
    const backup = json(made);
    t.like(backup, { ok: true, engine: 'mysql', verify: null });
    t.deepEqual(backup.files, ['secret.key']);
    const dump = path.join(dir, 'oncall.sql');
    writeFileSync(dump, execFileSync('mariadb-dump', [...client, '--single-transaction', '--routines', '--triggers', '--hex-blob', live.name]), {
      mode: 0o600,
    });
    // The live ledger moves on after the dump.
    for (let i = 0; i < 5; i++) await ta.app.ledger.append({ type: 'human.note', actor: 'test', reason: `after ${i}`, data: {} });

    // Restore elsewhere: a fresh database and data directory.
    const restoredDb = await database();
    execFileSync('sh', ['-c', `mariadb ${client.join(' ')} ${restoredDb.name} < "${dump}"`]);
    const restoredDir = path.join(tempDir(t, 'oncall-mysql-restored-'), 'data');
    const renv = { ...sqliteEnv(restoredDir), SERVICE_DATABASE_URL: restoredDb.url };

    // A host holding a lease on that database is running there: refused.
    const leaseDb = openDb({ databaseUrl: restoredDb.url, dataDir: restoredDir });
    await new LeaseRepo(leaseDb).take('connectors:check', 'some-host', 60_000, Date.now());
    const busy = await oncall(['restore', files, '--json'], renv);
    t.like(json(busy), { ok: false, error: 'service_running' });
    await new LeaseRepo(leaseDb).release('connectors:check', 'some-host');
    await leaseDb.destroy();

    const restored = await oncall(['restore', files, '--json'], renv);
    t.is(restored.code, 0, restored.stderr + restored.stdout);
    const r = json(restored);
    t.like(r, { ok: true, engine: 'mysql', before: { ok: true }, after: { ok: true } });
    t.true(r.head.seq >= backup.head.seq, 'the dump holds at least the head the files name');
    t.true(existsSync(path.join(restoredDir, 'secret.key')));

    const second = await startApp(t, { store: { dataDir: restoredDir, databaseUrl: restoredDb.url, cleanup: async () => undefined }, manualTick: true });
    t.true((await second.app.verifyLedger()).ok);
    t.is((await second.call('GET', `/v1/ledger?after_seq=${backup.head.seq - 1}&order=asc&limit=1`)).body.events[0].hash, backup.head.hash);

    // The files of a later backup do not belong to the older dump: refused, nothing moved.
    const later = path.join(dir, 'later.tar.gz');
    for (let i = 0; i < 5; i++) await ta.app.ledger.append({ type: 'human.note', actor: 'test', reason: `later ${i}`, data: {} });
    t.is((await oncall(['backup', later], env)).code, 0);
    const olderDb = await database();
    execFileSync('sh', ['-c', `mariadb ${client.join(' ')} ${olderDb.name} < "${dump}"`]);
    const mismatch = await oncall(['restore', later, '--json'], {
      ...sqliteEnv(path.join(tempDir(t, 'oncall-mismatch-'), 'data')),
      SERVICE_DATABASE_URL: olderDb.url,
    });
    t.is(mismatch.code, 1);
    t.like(json(mismatch), { error: 'backup_broken' });
    t.regex(json(mismatch).message, /Load the dump taken with this backup first/);
  },
);
