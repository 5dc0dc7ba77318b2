// Debian's PostgreSQL 15 and prometheus-postgres-exporter for a test or the eval: a private
// cluster of the test's own (initdb in a temporary folder, run as the `postgres` user, on a
// loopback port, never the machine's on 5432) and its exporter signing in with the monitoring
// account packs/postgres/README.md documents; each stopped and its files removed by its teardown.
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startDaemon, type Teardowns } from './daemon.ts';
import { freePort } from './wait.ts';

export const PG_BIN_DIR = process.env.PG_BIN_DIR?.trim() || '/usr/lib/postgresql/15/bin';
export const POSTGRES_BIN = path.join(PG_BIN_DIR, 'postgres');
export const INITDB_BIN = path.join(PG_BIN_DIR, 'initdb');
export const POSTGRES_EXPORTER_BIN = process.env.POSTGRES_EXPORTER_BIN?.trim() || '/usr/bin/prometheus-postgres-exporter';

/** The monitoring account of packs/postgres/README.md: `pg_monitor`, and nothing else. */
export const MONITOR = { user: 'oncall_monitor', password: 'monitor-test-password-5b2e' };

export interface RunningPostgres {
  port: number;
  /** `127.0.0.1:<port>` */
  address: string;
  pid: number | undefined;
  /** A new connection as the superuser (trust on loopback): the test's own sessions. */
  session(database?: string): Promise<pg.Client>;
  /** One statement as the superuser, on a connection of its own. */
  sql(text: string, values?: unknown[]): Promise<Array<Record<string, unknown>>>;
  /** The connector's settings for the monitoring account. */
  settings: Record<string, unknown>;
}

function ids(user: string): { uid: number; gid: number } {
  return { uid: Number(execFileSync('id', ['-u', user]).toString().trim()), gid: Number(execFileSync('id', ['-g', user]).toString().trim()) };
}

/**
 * A private cluster: initdb (as `postgres` when run as root, since PostgreSQL refuses root),
 * loopback only, the superuser trusted and the monitoring account with its password
 * (scram-sha-256), `max_connections` as given, and the monitoring account made.
 */
export async function startPostgres(t: Teardowns, o: { maxConnections?: number; port?: number; replicaOf?: RunningPostgres } = {}): Promise<RunningPostgres> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-postgres-'));
  const data = path.join(dir, 'data');
  const as = process.getuid?.() === 0 ? ids('postgres') : undefined;
  if (as !== undefined) chownSync(dir, as.uid, as.gid);
  if (o.replicaOf !== undefined)
    // A streaming replica: a base backup of the primary with its standby settings (-R).
    execFileSync(
      path.join(PG_BIN_DIR, 'pg_basebackup'),
      ['-h', '127.0.0.1', '-p', String(o.replicaOf.port), '-U', 'postgres', '-D', data, '-R', '-X', 'stream', '--no-sync'],
      {
        stdio: 'pipe',
        cwd: dir,
        ...(as ?? {}),
      },
    );
  else {
    execFileSync(INITDB_BIN, ['-D', data, '-U', 'postgres', '--auth-local=trust', '--auth-host=trust', '--no-sync', '-E', 'UTF8', '--locale=C'], {
      stdio: 'pipe',
      cwd: dir,
      ...(as ?? {}),
    });
    writeFileSync(
      path.join(data, 'pg_hba.conf'),
      [
        `host all ${MONITOR.user} 127.0.0.1/32 scram-sha-256`,
        'host all postgres 127.0.0.1/32 trust',
        'host replication postgres 127.0.0.1/32 trust',
        'host all all 127.0.0.1/32 scram-sha-256',
        'local all all trust',
        '',
      ].join('\n'),
    );
    if (as !== undefined) chownSync(path.join(data, 'pg_hba.conf'), as.uid, as.gid);
  }
  const port = o.port ?? (await freePort());
  const superuser = (database = 'postgres') => new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database });
  const { pid } = await startDaemon(t, {
    name: 'postgres',
    bin: POSTGRES_BIN,
    args: [
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      dir,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `max_connections=${o.maxConnections ?? 30}`,
      '-c',
      'deadlock_timeout=200ms',
      '-c',
      'fsync=off',
    ],
    dir,
    base: '',
    ...(as ?? {}),
    ready: async () => {
      const c = superuser();
      c.on('error', () => undefined);
      try {
        await c.connect();
        return true;
      } catch {
        return false;
      } finally {
        await c.end().catch(() => undefined);
      }
    },
  });
  const sql = async (text: string, values: unknown[] = []) => {
    const c = superuser();
    await c.connect();
    try {
      return (await c.query(text, values)).rows as Array<Record<string, unknown>>;
    } finally {
      await c.end();
    }
  };
  // The exact grants of README.md (a replica has them from its primary).
  if (o.replicaOf === undefined) {
    await sql(`CREATE ROLE ${MONITOR.user} LOGIN PASSWORD '${MONITOR.password}'`);
    await sql(`GRANT pg_monitor TO ${MONITOR.user}`);
  }
  return {
    port,
    address: `127.0.0.1:${port}`,
    pid,
    session: async (database) => {
      const c = superuser(database);
      c.on('error', () => undefined);
      await c.connect();
      t.teardown(() => c.end().catch(() => undefined));
      return c;
    },
    sql,
    settings: { host: '127.0.0.1', port, database: 'postgres', user: MONITOR.user, password: MONITOR.password, timeout_s: 5 },
  };
}

/** prometheus-postgres-exporter of `db`, signing in as the monitoring account: answers its scrape target. */
export async function startPostgresExporter(t: Teardowns, db: RunningPostgres, o: { port?: number } = {}): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-postgres-exporter-'));
  const target = `127.0.0.1:${o.port ?? (await freePort())}`;
  await startDaemon(t, {
    name: 'prometheus-postgres-exporter',
    bin: POSTGRES_EXPORTER_BIN,
    args: [`--web.listen-address=${target}`],
    env: {
      ...process.env,
      DATA_SOURCE_NAME: `postgresql://${MONITOR.user}:${MONITOR.password}@${db.address}/postgres?sslmode=disable`,
    },
    dir,
    base: '',
    ready: () =>
      fetch(`http://${target}/metrics`).then(
        (r) => r.ok,
        () => false,
      ),
  });
  return target;
}

/** What is missing to run PostgreSQL tests here, or null. */
export function postgresMissing(): string | null {
  for (const [bin, pkg] of [
    [POSTGRES_BIN, 'postgresql-15'],
    [INITDB_BIN, 'postgresql-15'],
    [POSTGRES_EXPORTER_BIN, 'prometheus-postgres-exporter'],
  ] as const)
    if (!existsSync(bin)) return `${bin} not found (apt-get install ${pkg})`;
  return null;
}
