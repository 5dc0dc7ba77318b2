import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import type { Services } from '../host/app.ts';
import { ConfigError, loadConfig, type Config } from '../host/config.ts';
import { databaseLabel } from '../host/doctor/doctor.service.ts';
import { installed } from '../host/install/identity.ts';
import { silentLogger } from '../host/log.ts';
import { loadPlugins, pluginDirs } from '../host/plugins/loader.ts';
import { openDb, type Db } from '../host/storage/db.ts';
import { pendingMigrations } from '../host/storage/migrate.ts';
import { PLUGIN_API_VERSION } from '../host/version.ts';
import type { PreflightCheck, PreflightName, PreflightReport } from './commands/preflight.ts';
import { withContext } from './context.ts';

type Finding = Omit<PreflightCheck, 'name' | 'ok'>;
const ok = (detail: string): Finding => ({ level: 'ok', detail });
const warn = (detail: string): Finding => ({ level: 'warn', detail });
const fail = (detail: string): Finding => ({ level: 'fail', detail });
const message = (e: unknown): string => (e instanceof Error ? e.message : String(e));
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * The checks of `oncall preflight`: what must hold before `npm start` can succeed. Creates
 * nothing: no data directory, no SQLite file, no migration table, no secret key.
 */
export async function runPreflight(env: NodeJS.ProcessEnv, opts: { deep: boolean }): Promise<PreflightReport> {
  const found: Array<[PreflightName, Finding]> = [];
  const report = (): PreflightReport => {
    const checks = found.map(([name, f]) => ({ name, ok: f.level !== 'fail', level: f.level, detail: f.detail }));
    return { ok: checks.every((c) => c.ok), deep: opts.deep, checks };
  };

  let config: Config;
  try {
    config = loadConfig(env);
    found.push(['config', ok('the SERVICE_* variables are valid')]);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    found.push(['config', fail(`invalid configuration: ${e.problems.join('; ')}`)]);
    return report();
  }

  found.push(['data_dir', dataDir(config.dataDir)]);

  const sqliteFile = path.join(config.dataDir, 'service.db');
  let db: Db | null = null;
  let reachable = false;
  try {
    if (config.databaseUrl === null && !existsSync(sqliteFile)) {
      found.push(['database', ok(`SQLite ${sqliteFile} will be created at first start`)]);
      found.push(['migrations', ok('a new database: the schema is created at first start')]);
    } else {
      db = openDb(config, { warn: () => {} });
      try {
        await db.raw('select 1');
        reachable = true;
        found.push(['database', ok(`reachable (${databaseLabel(config)})`)]);
      } catch (e) {
        found.push([
          'database',
          fail(`cannot reach the database (${databaseLabel(config)}): ${message(e)}; check SERVICE_DATABASE_URL and that the server is running`),
        ]);
        found.push(['migrations', fail('not checked: the database is unreachable')]);
      }
      if (reachable) found.push(['migrations', await migrations(db)]);
    }
  } finally {
    await db?.destroy();
  }

  found.push(['port', await port(config.host, config.port)]);
  found.push(['plugins', await plugins(config)]);

  if (opts.deep) {
    const started = reachable && (await installStarted(config));
    if (!started) {
      const why =
        config.databaseUrl === null && !existsSync(sqliteFile)
          ? 'the install has not started yet'
          : reachable
            ? 'the install has not started yet'
            : 'the database is unreachable';
      found.push(['connectors', warn(`not checked: ${why} (connectors are checked once the service runs; doctor shows them)`)]);
      found.push(['mail', warn(`not checked: ${why}`)]);
    } else {
      const [c, m] = await withContext(config, async (ctx) => {
        const app = await ctx.app();
        return [await connectors(app.connectors), await mail(app.mail)];
      }).catch((e: unknown) => [fail(`cannot open the connectors: ${message(e)}`), fail(`cannot open the mail settings: ${message(e)}`)] as const);
      found.push(['connectors', c], ['mail', m]);
    }
  }
  return report();
}

/** Writable where it is, or creatable (its nearest existing parent writable). */
function dataDir(dir: string): Finding {
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) return fail(`SERVICE_DATA_DIR ${dir} is not a directory`);
    const probe = path.join(dir, `.preflight-${randomBytes(4).toString('hex')}`);
    try {
      writeFileSync(probe, '');
      rmSync(probe, { force: true });
      return ok(`${dir} is writable`);
    } catch (e) {
      return fail(`cannot write to ${dir}: ${(e as NodeJS.ErrnoException).code ?? message(e)}; give the service's user write access`);
    }
  }
  let parent = path.dirname(dir);
  while (!existsSync(parent) && path.dirname(parent) !== parent) parent = path.dirname(parent);
  try {
    accessSync(parent, constants.W_OK);
    return ok(`${dir} does not exist yet and will be created at first start`);
  } catch {
    return fail(`${dir} does not exist and ${parent} is not writable: create it for the service's user`);
  }
}

async function migrations(db: Db): Promise<Finding> {
  try {
    // Without the table, knex would create it to list migrations: preflight creates nothing.
    if (!(await db.schema.hasTable('knex_migrations'))) return ok('an empty database: the schema is created at first start');
    const n = await pendingMigrations(db);
    return n === 0 ? ok('schema is current') : warn(`${plural(n, 'migration')} pending: applied at the next start`);
  } catch (e) {
    return fail(`cannot read the migration table: ${message(e)}`);
  }
}

async function port(host: string, p: number): Promise<Finding> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EADDRINUSE') resolve(fail(`port ${p} on ${host} is in use: is the service already running? (choose another with SERVICE_PORT)`));
      else if (e.code === 'EACCES') resolve(fail(`not allowed to listen on port ${p} on ${host}: use a port above 1023 or give the service the right`));
      else if (e.code === 'EADDRNOTAVAIL') resolve(fail(`${host} is not an address of this machine: check SERVICE_HOST`));
      else resolve(fail(`cannot listen on ${host}:${p}: ${e.code ?? e.message}`));
    });
    server.listen(p, host, () => server.close(() => resolve(ok(`${host}:${p} is free`))));
  });
}

async function plugins(config: Config): Promise<Finding> {
  try {
    const seen = await loadPlugins({ dirs: pluginDirs(config), log: silentLogger(), hostApi: PLUGIN_API_VERSION });
    const loaded = `${plural(seen.loaded.length, 'plugin')} loaded`;
    if (seen.broken.length === 0) return ok(loaded);
    return warn(`${loaded}; ${plural(seen.broken.length, 'broken plugin')} will be skipped: ${seen.broken.map((b) => b.problem).join('; ')}`);
  } catch (e) {
    return fail(`cannot load plugins: ${message(e)}`);
  }
}

async function installStarted(config: Config): Promise<boolean> {
  const db = openDb(config, { warn: () => {} });
  try {
    return await installed(db);
  } catch {
    return false;
  } finally {
    await db.destroy();
  }
}

async function connectors(service: Services['connectors']): Promise<Finding> {
  const listed = await service.list();
  if (listed.file?.problem != null) return fail(`connectors.json (${listed.file.path}): ${listed.file.problem}`);
  if (listed.connectors.length === 0) return warn('no connectors configured');
  const problems: string[] = [];
  for (const c of listed.connectors) {
    const checked = await service.check(c.name, null);
    if (checked.check === null || !checked.check.ok)
      problems.push(`${c.name} (${c.kind}): ${checked.check?.problem ?? checked.last_problem ?? 'cannot be checked'}`);
  }
  const n = listed.connectors.length;
  if (problems.length > 0) return fail(`${plural(n, 'connector')} checked, ${problems.length} with a problem: ${problems.join('; ')}`);
  return ok(`${plural(n, 'connector')} checked, all healthy`);
}

async function mail(service: Services['mail']): Promise<Finding> {
  const glass = await service.breakGlass();
  if (!glass.open) return ok('a mail provider is set and its last send succeeded');
  return warn(
    `sign-in codes cannot be sent yet (${glass.reason ?? 'no successful send'}): set a provider and send a test (PUT /v1/settings/mail, POST /v1/settings/mail/test)`,
  );
}
