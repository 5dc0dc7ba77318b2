import pg from 'pg';
import type {
  ConnectorContext,
  ConnectorFindings,
  ConnectorPluginWithCapabilities,
  ConnectorReadRequest,
  ConnectorReadResult,
  ConnectorTestResult,
} from '../../../host/plugins/contract.ts';

/**
 * PostgreSQL through a monitoring account (npm `pg`). `test` reports the server's version and
 * which of the loaded packs' `sql` statements the account may run; `read` serves the `sql`
 * capability: one statement a pack declared, by name, in a read-only transaction with a
 * statement timeout, wrapped so that at most `max_rows` rows come back. See README.md.
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

/** A declared statement as packs write it (the manifest's `named` schema). */
interface Statement {
  dialect: 'postgres';
  text: string;
}

const settingsOf = (ctx: ConnectorContext): Settings => ctx.settings as unknown as Settings;
const timeoutMs = (s: Settings) => Math.round((s.timeout_s ?? DEFAULT_TIMEOUT_S) * 1000);
const where = (s: Settings) => `${s.host}:${s.port ?? 5432}`;

/** One connection for one call, closed afterwards and at once when the host stops waiting. */
async function connected<T>(ctx: ConnectorContext, use: (c: pg.Client) => Promise<T>): Promise<T> {
  const s = settingsOf(ctx);
  const client = new pg.Client({
    host: s.host,
    port: s.port ?? 5432,
    user: s.user,
    ...(s.password === undefined ? {} : { password: s.password }),
    database: s.database ?? s.user,
    connectionTimeoutMillis: timeoutMs(s),
    query_timeout: timeoutMs(s) + 1000,
    application_name: 'oncall-engineer',
  });
  client.on('error', () => undefined);
  const stop = () => void client.end().catch(() => undefined);
  ctx.signal?.addEventListener('abort', stop, { once: true });
  try {
    await client.connect();
    return await use(client);
  } finally {
    ctx.signal?.removeEventListener('abort', stop);
    await client.end().catch(() => undefined);
  }
}

/** A failure in words a person can act on; never the password. */
function problemOf(e: unknown, s: Settings): string {
  const err = e as { code?: string; message?: string };
  const secret = s.password;
  const scrub = (t: string) => (secret === undefined || secret === '' ? t : t.split(secret).join('[secret]'));
  switch (err.code) {
    case 'ECONNREFUSED':
      return `cannot connect to ${where(s)}: connection refused`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot resolve ${s.host}`;
    case '28P01':
    case '28000':
      return `authentication failed for user ${s.user} (${scrub(err.message ?? '')})`;
    case '57014':
      return `the statement ran past its ${timeoutMs(s) / 1000} s timeout and was cancelled`;
    case '42501':
      return `permission denied: ${scrub(err.message ?? '')} (README.md: the grants of the monitoring account)`;
    case '25006':
      return `refused in a read-only transaction: ${scrub(err.message ?? '')}`;
  }
  const text = scrub(err.message ?? String(e));
  if (/timeout/i.test(text)) return `no answer from ${where(s)} within ${timeoutMs(s) / 1000} s`;
  return text.split('\n', 1)[0]!.slice(0, 500);
}

/** A value as JSON keeps it: times as ISO 8601, bytes by their length, anything else as text. */
function plain(v: unknown): unknown {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
  if (Buffer.isBuffer(v)) return `<${v.length} bytes>`;
  if (Array.isArray(v)) return v.map(plain);
  return JSON.parse(JSON.stringify(v)) as unknown;
}

/**
 * Runs a declared statement read-only: in a `READ ONLY` transaction (a write is refused by the
 * server), with `statement_timeout` and `lock_timeout` set for it alone, wrapped as a subquery so
 * it can only be a query and answers at most `limit + 1` rows; rolled back whatever happens.
 */
async function run(
  c: pg.Client,
  s: Settings,
  text: string,
  params: unknown[],
  limit: number,
): Promise<{ columns: string[]; rows: unknown[][]; truncated: boolean }> {
  const body = text.trim().replace(/;+\s*$/, '');
  await c.query('BEGIN TRANSACTION ISOLATION LEVEL READ COMMITTED READ ONLY');
  try {
    await c.query(`SET LOCAL statement_timeout = ${timeoutMs(s)}`);
    await c.query(`SET LOCAL lock_timeout = ${timeoutMs(s)}`);
    const r = await c.query({ text: `SELECT * FROM (\n${body}\n) AS oncall_statement LIMIT ${limit + 1}`, values: params, rowMode: 'array' });
    const rows = (r.rows as unknown[][]).map((row) => row.map(plain));
    return { columns: r.fields.map((f) => f.name), rows: rows.slice(0, limit), truncated: rows.length > limit };
  } finally {
    await c.query('ROLLBACK').catch(() => undefined);
  }
}

const plugin: ConnectorPluginWithCapabilities = {
  async test(ctx: ConnectorContext): Promise<ConnectorTestResult & ConnectorFindings> {
    const s = settingsOf(ctx);
    try {
      return await connected(ctx, async (c) => {
        const v = await c.query<{ version: string; user: string; replica: boolean }>(
          'SELECT current_setting($1) AS version, current_user AS user, pg_is_in_recovery() AS replica',
          ['server_version'],
        );
        const row = v.rows[0]!;
        // Which of the packs' statements this account may run: each run as `read` runs it, with no row.
        const statements: Record<string, string> = {};
        for (const [name, d] of Object.entries(ctx.named?.sql ?? {})) {
          if ((d as Partial<Statement>).dialect !== 'postgres') continue;
          try {
            await run(c, s, String((d as Partial<Statement>).text), [], 0);
            statements[name] = 'may run';
          } catch (e) {
            statements[name] = problemOf(e, s);
          }
        }
        return { ok: true, problem: null, found: { version: row.version, user: row.user, replica: row.replica, statements } };
      });
    } catch (e) {
      return { ok: false, problem: problemOf(e, s) };
    }
  },

  async read(ctx: ConnectorContext, r: ConnectorReadRequest): Promise<ConnectorReadResult> {
    const s = settingsOf(ctx);
    if (r.capability !== 'sql') return { ok: false, problem: `postgres reads sql only, not ${r.capability}` };
    const d = r.declared?.value as Partial<Statement> | undefined;
    if (d === undefined || d.dialect !== 'postgres' || typeof d.text !== 'string')
      return { ok: false, problem: 'no postgres statement was declared for this read' };
    const params = Array.isArray(r.request.params) ? r.request.params : [];
    const started = performance.now();
    try {
      const answer = await connected(ctx, (c) => run(c, s, d.text!, params, s.max_rows ?? DEFAULT_MAX_ROWS));
      return { ok: true, problem: null, answer: { ...answer, took_ms: Math.round(performance.now() - started) }, shown: d.text.trim() };
    } catch (e) {
      return { ok: false, problem: problemOf(e, s) };
    }
  },
};

export default plugin;
