import type { Knex } from 'knex';
import type { LeafNode, QueryNode, StringField } from './parse.ts';

/**
 * Turns a parsed query into WHERE conditions on a builder that selects from `episodes` (not
 * aliased). Everything is filtered by the database, the same way on SQLite and MySQL:
 *
 * - exact `:` is `col = ?` and a prefix `Pre*` is `substr(col, 1, n) = ?` (both engines count
 *   characters; LIKE is not used because SQLite's folds ASCII case);
 * - text `~` is `<lower-cased column> LIKE ? ESCAPE '!'` with a lower-cased pattern, `?` → `_`
 *   and `%` `_` `!` escaped with `!` (not backslash: the engines read it differently);
 * - alerts and data are `episodes.id IN (select episode_id ...)` on their own tables;
 * - every condition is true or false, never SQL NULL (nullable columns are tested with
 *   IS NOT NULL first), so a negation `NOT (...)` is the exact complement.
 *
 * Values only ever travel as bindings.
 */
export function applyQuery(q: Knex.QueryBuilder, node: QueryNode, nowMs: number, opts: CompileOptions = {}): Knex.QueryBuilder {
  if (!Number.isSafeInteger(nowMs)) throw new TypeError('nowMs must be an integer number of milliseconds');
  const ctx: Ctx = { nowMs, selective: opts.selective ?? (() => false) };
  return q.where((b) => {
    add(b, node, ctx);
  });
}

export interface CompileOptions {
  /**
   * True for an `alert:`/`data.` term that matches few episodes: it is then looked up through
   * its own table's index (`episodes.id IN (...)`); any other is a correlated `EXISTS`, which
   * lets the database walk episodes newest first and stop at the page's end. Both give the
   * same answer; only the speed differs (docs/performance.md).
   */
  selective?: (leaf: LeafNode) => boolean;
}

interface Ctx {
  nowMs: number;
  selective: (leaf: LeafNode) => boolean;
}

/** Adds `node` to `b` as one AND-ed condition. */
function add(b: Knex.QueryBuilder, node: QueryNode, ctx: Ctx): void {
  switch (node.type) {
    case 'and':
      for (const item of node.items) b.where((g) => add(g, item, ctx));
      return;
    case 'or':
      node.items.forEach((item, i) => {
        if (i === 0) b.where((g) => add(g, item, ctx));
        else b.orWhere((g) => add(g, item, ctx));
      });
      return;
    case 'not':
      b.whereNot((g) => add(g, node.item, ctx));
      return;
    default:
      leaf(b, node, ctx);
  }
}

/** The opposite comparison: `now - t < x` is `t > now - x`. */
const FLIP = { '<': '>', '<=': '>=', '>': '<', '>=': '<=' } as const;

/** Where each string field lives: its column, the lower-cased copy `~` reads, nullable or not. */
interface Column {
  table: 'episodes' | 'episode_alerts' | 'episode_data';
  col: string;
  lc: string;
  nullable: boolean;
}

const COLUMNS: Record<StringField, Column> = {
  service: { table: 'episodes', col: 'episodes.service', lc: 'episodes.service_lc', nullable: false },
  // Stored lower-case already: `~` reads the column itself.
  kind: { table: 'episodes', col: 'episodes.kind', lc: 'episodes.kind', nullable: false },
  state: { table: 'episodes', col: 'episodes.state', lc: 'episodes.state', nullable: false },
  decision: { table: 'episodes', col: 'episodes.decision', lc: 'episodes.decision', nullable: false },
  outcome: { table: 'episodes', col: 'episodes.outcome', lc: 'episodes.outcome', nullable: false },
  result: { table: 'episodes', col: 'episodes.result', lc: 'episodes.result', nullable: false },
  note: { table: 'episodes', col: 'episodes.note', lc: 'episodes.note_lc', nullable: true },
  alert: { table: 'episode_alerts', col: 'episode_alerts.name', lc: 'episode_alerts.name_lc', nullable: false },
  data: { table: 'episode_data', col: 'episode_data.value', lc: 'episode_data.value_lc', nullable: false },
};

const SPAN_OPS = new Set(['<', '<=', '>', '>=']);

function leaf(b: Knex.QueryBuilder, node: LeafNode, ctx: Ctx): void {
  const { nowMs } = ctx;
  switch (node.type) {
    case 'compare': {
      if (!SPAN_OPS.has(node.op)) throw new TypeError(`bad comparison ${String(node.op)}`);
      if (node.field === 'duration') {
        b.whereRaw(`coalesce(??, ?) - ?? ${node.op} ?`, ['episodes.t_close_ms', nowMs, 'episodes.t_open_ms', node.ms]);
      } else {
        // The age compared as the opening time itself, so the t_open_ms index serves it.
        b.where('episodes.t_open_ms', FLIP[node.op], nowMs - node.ms);
      }
      return;
    }
    case 'last':
      b.where('episodes.t_open_ms', '>=', nowMs - node.ms);
      return;
    case 'text':
      if (node.field === null) {
        // Free text: the service, the note or any alert name.
        b.where((g) => like(g, COLUMNS.service, node.text))
          .orWhere((g) => like(g, COLUMNS.note, node.text))
          .orWhereExists((sub) => {
            sub.select(sub.client.raw('1')).from('episode_alerts').whereRaw('?? = ??', ['episode_alerts.episode_id', 'episodes.id']);
            like(sub, COLUMNS.alert, node.text);
          });
        return;
      }
      onField(b, node.field, node.key, false, (g, c) => like(g, c, node.text));
      return;
    case 'exact':
      onField(b, node.field, node.key, ctx.selective(node), (g, c) => {
        g.where(c.col, node.value);
      });
      return;
    case 'prefix':
      onField(b, node.field, node.key, ctx.selective(node), (g, c) => {
        // The range is implied by the substr test (which alone is exact on both engines) and
        // lets an index narrow the scan to the prefix.
        g.where(c.col, '>=', node.prefix);
        const above = successor(node.prefix);
        if (above !== null) g.where(c.col, '<', above);
        g.whereRaw('substr(??, 1, ?) = ?', [c.col, Array.from(node.prefix).length, node.prefix]);
      });
      return;
    case 'present':
      // Always true for a NOT NULL column of episodes; `1 = 1` keeps the group from being empty.
      onField(b, node.field, node.key, false, (g, c) => {
        if (c.table === 'episodes' && !c.nullable) g.whereRaw('1 = 1');
      });
      return;
  }
}

/**
 * The smallest string above every string that starts with `prefix` in code-point order (the
 * order of both engines' binary collations): its last character plus one. Null when there is
 * no such character to move to.
 */
function successor(prefix: string): string | null {
  const chars = Array.from(prefix);
  const last = chars.pop()!.codePointAt(0)!;
  if (last >= 0x10ffff || (last >= 0xd7ff && last < 0xe000)) return null;
  return chars.join('') + String.fromCodePoint(last + 1);
}

/**
 * Applies `cond` to the field's column: directly on `episodes` (guarded by IS NOT NULL when the
 * column is nullable), or as `episodes.id IN (select episode_id ...)` on the alert and data tables
 * (for data restricted to the key). An empty `cond` means "has a value".
 */
function onField(b: Knex.QueryBuilder, field: StringField, key: string | null, selective: boolean, cond: (g: Knex.QueryBuilder, c: Column) => void): void {
  const c = COLUMNS[field];
  if (c.table === 'episodes') {
    b.where((g) => {
      if (c.nullable) g.whereNotNull(c.col);
      cond(g, c);
    });
    return;
  }
  const rows = (sub: Knex.QueryBuilder): void => {
    if (field === 'data') {
      if (key === null) throw new TypeError('data field without a key');
      sub.where('episode_data.key', key);
    }
    cond(sub, c);
  };
  if (selective) {
    b.whereIn('episodes.id', (sub) => {
      sub.select(`${c.table}.episode_id`).from(c.table);
      rows(sub);
    });
  } else {
    b.whereExists((sub) => {
      sub
        .select(sub.client.raw('1'))
        .from(c.table)
        .whereRaw('?? = ??', [`${c.table}.episode_id`, 'episodes.id']);
      rows(sub);
    });
  }
}

/** The `alert:` and `data.` terms whose selectivity decides how they are looked up. */
export function lookupTerms(node: QueryNode): LeafNode[] {
  switch (node.type) {
    case 'and':
    case 'or':
      return node.items.flatMap(lookupTerms);
    case 'not':
      return lookupTerms(node.item);
    case 'exact':
    case 'prefix':
      return node.field === 'alert' || node.field === 'data' ? [node] : [];
    default:
      return [];
  }
}

/** Rows of the term's own table that match it, as a count query stopped at `cap`. */
export function termRows(db: Knex, node: LeafNode, cap: number): Knex.QueryBuilder {
  if ((node.type !== 'exact' && node.type !== 'prefix') || (node.field !== 'alert' && node.field !== 'data')) throw new TypeError('not a lookup term');
  const c = COLUMNS[node.field];
  const inner = db(c.table).select(db.raw('1')).limit(cap);
  if (node.field === 'data') inner.where('episode_data.key', node.key!);
  if (node.type === 'exact') inner.where(c.col, node.value);
  else {
    inner.where(c.col, '>=', node.prefix);
    const above = successor(node.prefix);
    if (above !== null) inner.where(c.col, '<', above);
  }
  return db.count({ n: '*' }).from(inner.as('t'));
}

/** `lc LIKE '%text%' ESCAPE '!'`, case-insensitive through the lower-cased column. */
function like(g: Knex.QueryBuilder, c: Column, text: string): void {
  if (c.nullable) g.whereNotNull(c.lc);
  g.whereRaw(`?? like ? escape '!'`, [c.lc, `%${likePattern(text)}%`]);
}

/** Lower-cases `text` and makes it a LIKE pattern: `?` is any one character, the rest literal. */
export function likePattern(text: string): string {
  let out = '';
  for (const ch of text.toLowerCase()) {
    if (ch === '?') out += '_';
    else if (ch === '%' || ch === '_' || ch === '!') out += `!${ch}`;
    else out += ch;
  }
  return out;
}
