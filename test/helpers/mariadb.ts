// Debian's MariaDB and prometheus-mysqld-exporter for a test: a private mariadbd of the test's own
// (mariadb-install-db in a temporary folder, run as the `mysql` user, on a loopback port, never
// the machine's on 3306) and its exporter signing in with the monitoring account
// packs/mysql/README.md documents; each stopped and its files removed by its teardown.
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { startDaemon, type Teardowns } from './daemon.ts';
import { freePort } from './wait.ts';

export const MARIADBD_BIN = process.env.MARIADBD_BIN?.trim() || '/usr/sbin/mariadbd';
export const MARIADB_INSTALL_DB = process.env.MARIADB_INSTALL_DB?.trim() || '/usr/bin/mariadb-install-db';
export const MYSQLD_EXPORTER_BIN = process.env.MYSQLD_EXPORTER_BIN?.trim() || '/usr/bin/prometheus-mysqld-exporter';

/** The monitoring account of packs/mysql/README.md. */
export const MYSQL_MONITOR = { user: 'oncall_monitor', password: 'monitor-test-password-8c1d' };

export interface RunningMariadb {
  port: number;
  address: string;
  pid: number | undefined;
  /** A new connection as root (no password, loopback): the test's own sessions, closed by the teardown. */
  session(): Promise<mysql.Connection>;
  /** One statement as root on a connection of its own. */
  sql(text: string, values?: unknown[]): Promise<unknown>;
  /** The mysql connector's settings for the monitoring account. */
  settings: Record<string, unknown>;
}

function ids(user: string): { uid: number; gid: number } {
  return { uid: Number(execFileSync('id', ['-u', user]).toString().trim()), gid: Number(execFileSync('id', ['-g', user]).toString().trim()) };
}

/** A private mariadbd: a fresh data folder, loopback only, `max_connections` and the slow query log as given, the monitoring account made. */
export async function startMariadb(
  t: Teardowns,
  o: {
    maxConnections?: number;
    longQueryTime?: number;
    /** A primary's or replica's server id; a primary (binlog: true) writes its binary log. */ serverId?: number;
    binlog?: boolean;
  } = {},
): Promise<RunningMariadb> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-mariadb-'));
  const data = path.join(dir, 'data');
  const as = process.getuid?.() === 0 ? ids('mysql') : undefined;
  if (as !== undefined) chownSync(dir, as.uid, as.gid);
  execFileSync(
    MARIADB_INSTALL_DB,
    ['--no-defaults', `--datadir=${data}`, '--auth-root-authentication-method=normal', '--skip-test-db', ...(as ? ['--user=mysql'] : [])],
    {
      stdio: 'pipe',
      cwd: dir,
    },
  );
  const port = await freePort();
  const socket = path.join(dir, 'mysqld.sock');
  const root = () => mysql.createConnection({ host: '127.0.0.1', port, user: 'root', connectTimeout: 2000 });
  const { pid } = await startDaemon(t, {
    name: 'mariadbd',
    bin: MARIADBD_BIN,
    args: [
      '--no-defaults',
      `--datadir=${data}`,
      `--port=${port}`,
      `--socket=${socket}`,
      '--bind-address=127.0.0.1',
      `--pid-file=${path.join(dir, 'mysqld.pid')}`,
      `--max-connections=${o.maxConnections ?? 30}`,
      '--innodb-buffer-pool-size=16M',
      '--innodb-lock-wait-timeout=300',
      ...(o.binlog === true ? [`--log-bin=${path.join(dir, 'binlog')}`, '--binlog-format=ROW'] : ['--skip-log-bin']),
      ...(o.serverId === undefined ? [] : [`--server-id=${o.serverId}`]),
      '--skip-name-resolve',
      '--slow-query-log=ON',
      `--slow-query-log-file=${path.join(dir, 'slow.log')}`,
      `--long-query-time=${o.longQueryTime ?? 1}`,
      ...(as ? ['--user=mysql'] : []),
    ],
    dir,
    base: '',
    ready: async () => {
      const c = await root().catch(() => null);
      if (c === null) return false;
      await c.end();
      return true;
    },
  });
  const sql = async (text: string, values: unknown[] = []) => {
    const c = await root();
    try {
      return (await c.query(text, values))[0];
    } finally {
      await c.end();
    }
  };
  // The exact grants of README.md.
  await sql(`CREATE USER '${MYSQL_MONITOR.user}'@'127.0.0.1' IDENTIFIED BY '${MYSQL_MONITOR.password}' WITH MAX_USER_CONNECTIONS 5`);
  await sql(`GRANT PROCESS, REPLICATION CLIENT, SLAVE MONITOR, SELECT ON *.* TO '${MYSQL_MONITOR.user}'@'127.0.0.1'`);
  return {
    port,
    address: `127.0.0.1:${port}`,
    pid,
    session: async () => {
      const c = await root();
      c.on('error', () => undefined);
      t.teardown(() => c.destroy());
      return c;
    },
    sql,
    settings: { host: '127.0.0.1', port, user: MYSQL_MONITOR.user, password: MYSQL_MONITOR.password, timeout_s: 5 },
  };
}

/** prometheus-mysqld-exporter of `db`, signing in as the monitoring account (a my.cnf of mode 0600): answers its scrape target. */
export async function startMysqldExporter(t: Teardowns, db: RunningMariadb): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-mysqld-exporter-'));
  const target = `127.0.0.1:${await freePort()}`;
  const cnf = path.join(dir, 'my.cnf');
  writeFileSync(cnf, `[client]\nuser=${MYSQL_MONITOR.user}\npassword=${MYSQL_MONITOR.password}\nhost=127.0.0.1\nport=${db.port}\n`, { mode: 0o600 });
  await startDaemon(t, {
    name: 'prometheus-mysqld-exporter',
    bin: MYSQLD_EXPORTER_BIN,
    args: [`--web.listen-address=${target}`, `--config.my-cnf=${cnf}`],
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

/** What is missing to run MariaDB pack tests here, or null. */
export function mariadbMissing(): string | null {
  for (const [bin, pkg] of [
    [MARIADBD_BIN, 'mariadb-server'],
    [MARIADB_INSTALL_DB, 'mariadb-server'],
    [MYSQLD_EXPORTER_BIN, 'prometheus-mysqld-exporter'],
  ] as const)
    if (!existsSync(bin)) return `${bin} not found (apt-get install ${pkg})`;
  return null;
}
