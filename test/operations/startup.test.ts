// Starting (issue 24): a start the machine stops (a full disk, a database of a newer version,
// a data directory in use) says so in one line with no stack trace; the data files are 0600.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { createApp } from '../../host/app.ts';
import { loadConfig } from '../../host/config.ts';
import { silentLogger } from '../../host/log.ts';
import { openDb } from '../../host/storage/db.ts';
import { SchemaNewerError } from '../../host/storage/migrate.ts';
import { ADMIN_TOKEN, serviceEnv, startApp } from '../helpers/app.ts';
import { createTestStore, everyRow, type TestStore } from '../helpers/db.ts';
import { testNeeding } from '../helpers/needs.ts';
import { spawnHost, type SpawnedHost } from '../helpers/service-process.ts';
import { hostOnTmpfs, tmpfsMissing } from '../helpers/tmpfs.ts';
import { waitFor } from '../helpers/wait.ts';

/** `node host/main.ts` on `store`, on a port it chooses. */
function host(t: ExecutionContext, store: TestStore, extra: Record<string, string> = {}) {
  return spawnHost(t, serviceEnv(store, { SERVICE_PORT: '0', SERVICE_HOST: '127.0.0.1', ...extra }));
}

testNeeding(tmpfsMissing, 'a start on a full disk says so in one line on stderr, with no stack trace, and exits 1', async (t) => {
  const h = hostOnTmpfs(t, { sizeMb: 4, full: true, env: { SERVICE_ADMIN_TOKEN: ADMIN_TOKEN } });
  t.is(await h.exited, 1);
  const lines = h
    .output()
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('{'));
  t.is(lines.length, 1, h.output());
  t.regex(lines[0]!, new RegExp(`^Cannot start: the disk holding ${h.dataDir} is full \\((ENOSPC|SQLITE_FULL)\\): free space, then start again$`));
  t.notRegex(h.output(), /\n\s+at /, 'no stack trace');
});

test('the service refuses to start on a database migrated by a newer version, says so in one line, and leaves the database as it was', async (t) => {
  const store = await createTestStore();
  t.teardown(() => store.cleanup());
  const first = await startApp(t, { store, manualTick: true });
  await first.app.db('knex_migrations').insert({ name: '209912312359_add_future_thing.ts', batch: 99, migration_time: new Date() });
  const before = await first.app.db('knex_migrations').count({ n: '*' }).first();
  await first.app.close();

  const err = await t.throwsAsync(createApp(loadConfig(serviceEnv(store)), { log: silentLogger(), manualTick: true }), { instanceOf: SchemaNewerError });
  t.deepEqual(err.unknown, ['209912312359_add_future_thing.ts']);

  const h = host(t, store);
  t.is(await h.exited, 1);
  t.is(
    h.stderr(),
    'Cannot start: the database was migrated by a newer version of oncall (1 migration this version does not know, the newest 209912312359_add_future_thing.ts): ' +
      'run that version again, or restore the backup taken before the upgrade (docs/install.md)\n',
  );
  const again = await startApp(t, { store, manualTick: true }).catch((e: unknown) => e);
  t.true(again instanceof SchemaNewerError, 'still refused: nothing was changed');
  const db = (await import('../../host/storage/db.ts')).openDb(loadConfig(serviceEnv(store)));
  t.teardown(() => db.destroy());
  t.deepEqual(await db('knex_migrations').count({ n: '*' }).first(), before);
});

test('a second service on the same data directory is refused in one line while the first runs, and starts once it has stopped', async (t) => {
  const store = await createTestStore();
  t.teardown(() => store.cleanup());
  const a = host(t, store);
  await waitFor('the first host to listen', async () => a.output().includes('Console and API on'), 30_000, 50);
  const b = host(t, store);
  t.is(await b.exited, 1);
  t.regex(
    b.stderr(),
    new RegExp(`^Cannot start: another oncall service \\(pid ${a.child.pid}, started [^)]+\\) is running on ${store.dataDir}: stop it first\\n$`),
  );
  a.child.kill('SIGTERM');
  t.is(await a.exited, 0, ended(a));
  const c = host(t, store);
  await waitFor(
    'the next host to listen',
    async () => c.output().includes('Console and API on') || (c.child.exitCode !== null && Promise.reject(new Error(c.stderr()))),
    30_000,
    50,
  );
  c.child.kill('SIGTERM');
  t.is(await c.exited, 0, ended(c));
});

/** How a host ended and what it last wrote: an exit by a signal says which one (a SIGTERM that came before the host listened for it once ended one: host/main.ts). */
function ended(h: SpawnedHost): string {
  return `ended by ${h.child.signalCode ?? `exit code ${String(h.child.exitCode)}`}; its output:\n${h.output().slice(-4000)}`;
}

test('a port already in use stops the start in one line', async (t) => {
  const store = await createTestStore();
  t.teardown(() => store.cleanup());
  const ta = await startApp(t, { manualTick: true });
  const port = new URL(ta.base).port;
  const h = host(t, store, { SERVICE_PORT: port });
  t.is(await h.exited, 1);
  t.is(h.stderr(), `Cannot start: port ${port} is already in use (SERVICE_PORT)\n`);
});

test('every file the service keeps in its data directory is readable by its owner only (0600), the directory it creates 0700', async (t) => {
  const store = await createTestStore();
  t.teardown(() => store.cleanup());
  const dataDir = path.join(store.dataDir, 'data');
  const ta = await startApp(t, { store, manualTick: true, env: { SERVICE_DATA_DIR: dataDir } });
  // A checkpoint is written once the head moved and 60 s passed.
  await ta.app.ledger.append({ type: 'human.note', actor: 'test', reason: 'x', data: {} });
  ta.clock.advance(61_000);
  await ta.app.tick();
  const files = readdirSync(dataDir);
  for (const f of ['ledger-checkpoints.jsonl', 'secret.key', 'service.pid']) t.true(files.includes(f), f);
  if (store.databaseUrl === null) for (const f of ['service.db', 'service.db-wal', 'service.db-shm']) t.true(files.includes(f), f);
  for (const f of files) t.is((statSync(path.join(dataDir, f)).mode & 0o777).toString(8), '600', f);
  t.is((statSync(dataDir).mode & 0o777).toString(8), '700');
});

test("createApp without serving (the CLI's build) writes nothing and creates no file, where a start brings the config files into force", async (t) => {
  const store = await createTestStore();
  t.teardown(() => store.cleanup());
  const configDir = mkdtempSync(path.join(tmpdir(), 'oncall-config-'));
  t.teardown(() => rmSync(configDir, { recursive: true, force: true }));
  const env = { SERVICE_CONFIG_DIR: configDir };
  const first = await startApp(t, { store, manualTick: true, env });
  // Waiting for the next start: an invalid policy.json and autonomy.json (each recorded), the example estate.json.
  writeFileSync(path.join(configDir, 'policy.json'), 'not json');
  writeFileSync(path.join(configDir, 'autonomy.json'), 'not json');
  writeFileSync(path.join(configDir, 'estate.json'), readFileSync(new URL('../../examples/estate/estate.json', import.meta.url)));
  const config = loadConfig(first.env);
  const db = openDb(config, { warn: () => undefined });
  t.teardown(() => db.destroy());
  const files = () =>
    readdirSync(store.dataDir)
      .filter((f) => !f.startsWith('service.db'))
      .map((f) => `${f}: ${readFileSync(path.join(store.dataDir, f), 'hex')}`);
  const [rows, kept] = [await everyRow(db), files()];
  const services = await createApp(config, { serve: false, db, log: silentLogger() });
  t.is(services.identity.fingerprint, first.app.identity.fingerprint);
  t.deepEqual((await services.connectors.list()).connectors, []);
  await services.close();
  t.is(await everyRow(db), rows, 'no row of any table changed');
  t.deepEqual(files(), kept, 'no file in the data directory changed or was added');
  // A start on the same files writes: what the build above skipped.
  await startApp(t, { store, manualTick: true, env });
  t.not(await everyRow(db), rows);
});
