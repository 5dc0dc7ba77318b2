import mysql from 'mysql2/promise';
import type {
  ConnectorContext,
  ConnectorFindings,
  ConnectorPluginWithCapabilities,
  ConnectorReadRequest,
  ConnectorReadResult,
  ConnectorTestResult,
} from '../../../host/plugins/contract.ts';

/**
 * MariaDB and MySQL through a monitoring account (npm `mysql2`). `test` reports the server's
 * version and which of the loaded packs' `sql` statements the account may run; `read` serves the
 * `sql` capability: one statement a pack declared, by name, in a read-only transaction with a
 * statement timeout (`max_statement_time` on MariaDB, `max_execution_time` on MySQL), wrapped
 * so that at most `max_rows` rows come back. See README.md.
 */

interface Settings {
  host: string;
  port?: number;
  database?: string;
  user: string;
  password?: string;
  timeout_s?: number;
  max_rows?: number;
}

const DEFAULT_TIMEOUT_S = 5;
const DEFAULT_MAX_ROWS = 100;

interface Statement {
  dialect: 'mysql';
  text: string;
}

const settingsOf = (ctx: ConnectorContext): Settings => ctx.settings as unknown as Settings;
const timeoutMs = (s: Settings) => Math.round((s.timeout_s ?? DEFAULT_TIMEOUT_S) * 1000);
const where = (s: Settings) => `${s.host}:${s.port ?? 3306}`;

interface Session {
  c: mysql.Connection;
  mariadb: boolean;
  version: string;
}

/** One connection for one call, closed afterwards and destroyed at once when the host stops waiting. */
async function connected<T>(ctx: ConnectorContext, use: (session: Session) => Promise<T>): Promise<T> {
  const s = settingsOf(ctx);
  const c = await mysql.createConnection({
    host: s.host,
    port: s.port ?? 3306,
    user: s.user,
    ...(s.password === undefined ? {} : { password: s.password }),
    ...(s.database === undefined ? {} : { database: s.database }),
    connectTimeout: timeoutMs(s),
    multipleStatements: false,
    dateStrings: false,
    supportBigNumbers: true,
    bigNumberStrings: true,
  });
  c.on('error', () => undefined);
  const stop = () => c.destroy();
  ctx.signal?.addEventListener('abort', stop, { once: true });
  try {
    const [rows] = await c.query({ sql: 'SELECT VERSION() AS v', timeout: timeoutMs(s) });
    const version = String((rows as Array<{ v: string }>)[0]?.v ?? '');
    return await use({ c, mariadb: /mariadb/i.test(version), version });
  } finally {
    ctx.signal?.removeEventListener('abort', stop);
    await c.end().catch(() => c.destroy());
  }
}

/** A failure in words a person can act on; never the password. */
function problemOf(e: unknown, s: Settings): string {
  const err = e as { code?: string; errno?: number; message?: string };
  const secret = s.password;
  const scrub = (t: string) => (secret === undefined || secret === '' ? t : t.split(secret).join('[secret]'));
  // MariaDB's max_statement_time (1969) and MySQL's max_execution_time (3024).
  if (err.errno === 1969 || err.errno === 3024) return `the statement ran past its ${timeoutMs(s) / 1000} s timeout and was stopped`;
  switch (err.code) {
    case 'ECONNREFUSED':
      return `cannot connect to ${where(s)}: connection refused`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot resolve ${s.host}`;
    case 'ETIMEDOUT':
    case 'PROTOCOL_SEQUENCE_TIMEOUT':
      return `no answer from ${where(s)} within ${timeoutMs(s) / 1000} s`;
    case 'ER_ACCESS_DENIED_ERROR':
      return `authentication failed for user ${s.user}`;
    case 'ER_TABLEACCESS_DENIED_ERROR':
    case 'ER_SPECIFIC_ACCESS_DENIED_ERROR':
    case 'ER_DBACCESS_DENIED_ERROR':
    case 'ER_COLUMNACCESS_DENIED_ERROR':
      return `permission denied: ${scrub(err.message ?? '')} (README.md: the grants of the monitoring account)`;
    case 'ER_STATEMENT_TIMEOUT':
    case 'ER_QUERY_TIMEOUT':
      return `the statement ran past its ${timeoutMs(s) / 1000} s timeout and was stopped`;
    case 'ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION':
      return `refused in a read-only transaction: ${scrub(err.message ?? '')}`;
  }
  return scrub(err.message ?? String(e))
    .split('\n', 1)[0]!
    .slice(0, 500);
}

function plain(v: unknown): unknown {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  if (Array.isArray(v)) return v.map(plain);
  return JSON.parse(JSON.stringify(v)) as unknown;
}

/**
 * Runs a declared statement read-only: in a `READ ONLY` transaction (a write is refused by the
 * server), with the server's statement timeout set for this session, wrapped as a derived table
 * so it can only be a query and answers at most `limit + 1` rows; rolled back whatever happens.
 */
async function run(
  x: Session,
  s: Settings,
  text: string,
  params: unknown[],
  limit: number,
): Promise<{ columns: string[]; rows: unknown[][]; truncated: boolean }> {
  const body = text.trim().replace(/;+\s*$/, '');
  const ms = timeoutMs(s);
  await x.c.query(x.mariadb ? `SET SESSION max_statement_time = ${(ms / 1000).toFixed(3)}` : `SET SESSION max_execution_time = ${ms}`);
  await x.c.query('SET SESSION innodb_lock_wait_timeout = ' + Math.max(1, Math.ceil(ms / 1000)));
  await x.c.query('START TRANSACTION READ ONLY');
  try {
    const [rows, fields] = await x.c.query({
      sql: `SELECT * FROM (\n${body}\n) AS oncall_statement LIMIT ${limit + 1}`,
      values: params,
      rowsAsArray: true,
      timeout: ms + 1000,
    });
    const all = (rows as unknown[][]).map((row) => row.map(plain));
    return { columns: (fields ?? []).map((f) => f.name), rows: all.slice(0, limit), truncated: all.length > limit };
  } finally {
    await x.c.query('ROLLBACK').catch(() => undefined);
  }
}

const plugin: ConnectorPluginWithCapabilities = {
  async test(ctx: ConnectorContext): Promise<ConnectorTestResult & ConnectorFindings> {
    const s = settingsOf(ctx);
    try {
      return await connected(ctx, async (x) => {
        const [who] = await x.c.query('SELECT CURRENT_USER() AS u, @@read_only AS ro');
        const row = (who as Array<{ u: string; ro: number }>)[0]!;
        const statements: Record<string, string> = {};
        for (const [name, d] of Object.entries(ctx.named?.sql ?? {})) {
          if ((d as Partial<Statement>).dialect !== 'mysql') continue;
          try {
            await run(x, s, String((d as Partial<Statement>).text), [], 0);
            statements[name] = 'may run';
          } catch (e) {
            statements[name] = problemOf(e, s);
          }
        }
        return { ok: true, problem: null, found: { version: x.version, user: row.u, read_only: row.ro === 1, statements } };
      });
    } catch (e) {
      return { ok: false, problem: problemOf(e, s) };
    }
  },

  async read(ctx: ConnectorContext, r: ConnectorReadRequest): Promise<ConnectorReadResult> {
    const s = settingsOf(ctx);
    if (r.capability !== 'sql') return { ok: false, problem: `mysql reads sql only, not ${r.capability}` };
    const d = r.declared?.value as Partial<Statement> | undefined;
    if (d === undefined || d.dialect !== 'mysql' || typeof d.text !== 'string') return { ok: false, problem: 'no mysql statement was declared for this read' };
    const params = Array.isArray(r.request.params) ? r.request.params : [];
    const started = performance.now();
    try {
      const answer = await connected(ctx, (x) => run(x, s, d.text!, params, s.max_rows ?? DEFAULT_MAX_ROWS));
      return { ok: true, problem: null, answer: { ...answer, took_ms: Math.round(performance.now() - started) }, shown: d.text.trim() };
    } catch (e) {
      return { ok: false, problem: problemOf(e, s) };
    }
  },
};

export default plugin;
