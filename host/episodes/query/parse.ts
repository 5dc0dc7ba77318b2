import { AppError } from '../../errors.ts';

/**
 * The episode query language: text in, syntax tree out. A hand-written tokenizer feeds a
 * recursive-descent parser; every error is an AppError('bad_query') whose message says what is
 * wrong and where, as a 1-based column counted in characters (code points). The grammar and the
 * meaning of each field are in docs/query-language.md; compile.ts turns the tree into SQL.
 *
 * Over 300 lines and one concept: the grammar. The node types are its output, and the tokenizer
 * and the parser share one cursor over the characters (a token's meaning depends on where the
 * parser stands: `-` negates at the start of a term and is part of a value inside one) and one
 * error shape with its column. Apart, each would have to expose that state to the other.
 */

/** Fields compared as strings (`:` exact / prefix / present, `~` text match). */
export type StringField = 'service' | 'outcome' | 'kind' | 'decision' | 'state' | 'result' | 'note' | 'alert' | 'data';
/** Fields compared with a time span (`<`, `<=`, `>`, `>=`). */
export type SpanField = 'duration' | 'opened';
export type CompareOp = '<' | '<=' | '>' | '>=';

/** `field:value`: the value equals, byte for byte. `key` is the data key for `data.<key>`, else null. */
export interface ExactNode {
  type: 'exact';
  field: StringField;
  key: string | null;
  value: string;
}
/** `field:Pre*`: the value starts with `prefix` (case-sensitive, never empty: `field:*` is PresentNode). */
export interface PrefixNode {
  type: 'prefix';
  field: StringField;
  key: string | null;
  prefix: string;
}
/** `field:*`: the field has a value (note not NULL, at least one alert, the data key is there). */
export interface PresentNode {
  type: 'present';
  field: StringField;
  key: string | null;
}
/**
 * `field~text`, or a bare word / quoted string (field null: service, note or any alert name).
 * Case-insensitive containment; `?` in `text` stands for exactly one character.
 */
export interface TextNode {
  type: 'text';
  field: StringField | null;
  key: string | null;
  text: string;
}
/** `duration>5m`, `opened<7d`: the span in whole milliseconds. */
export interface CompareNode {
  type: 'compare';
  field: SpanField;
  op: CompareOp;
  ms: number;
}
/** `last:90d`: opened at most `ms` milliseconds ago. */
export interface LastNode {
  type: 'last';
  ms: number;
}
export interface AndNode {
  type: 'and';
  items: QueryNode[];
}
export interface OrNode {
  type: 'or';
  items: QueryNode[];
}
export interface NotNode {
  type: 'not';
  item: QueryNode;
}

export type LeafNode = ExactNode | PrefixNode | PresentNode | TextNode | CompareNode | LastNode;
export type QueryNode = LeafNode | AndNode | OrNode | NotNode;

export const MAX_QUERY_LENGTH = 1000;
export const MAX_DEPTH = 32;

const STRING_FIELDS: ReadonlySet<string> = new Set(['service', 'outcome', 'kind', 'decision', 'state', 'result', 'note', 'alert']);
const DATA_KEY = /^[A-Za-z0-9_.\-/]+$/;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const DURATION = /^(\d+(?:\.\d+)?)([smhdw]?)$/;

/** Parses a query; null when it is empty or only whitespace. Throws AppError('bad_query'). */
export function parseQuery(text: string): QueryNode | null {
  const chars = Array.from(text);
  if (chars.length > MAX_QUERY_LENGTH) {
    fail(`query is too long (${chars.length} characters, at most ${MAX_QUERY_LENGTH})`, MAX_QUERY_LENGTH + 1);
  }
  const parser = new Parser(chars);
  if (parser.peek().t === 'end') return null;
  const node = parser.parseOr(0);
  const tok = parser.peek();
  if (tok.t === 'rparen') fail('unmatched ")"', tok.col);
  if (tok.t !== 'end') fail(`unexpected ${describe(tok)}`, tok.col); // not reachable: parseAnd consumes all else
  return node;
}

function fail(what: string, col: number): never {
  throw new AppError('bad_query', `${what} at column ${col}`);
}

type Token = { t: 'lparen' | 'rparen' | 'not' | 'and' | 'or' | 'end'; col: number } | { t: 'leaf'; col: number; node: LeafNode };

function describe(tok: Token): string {
  switch (tok.t) {
    case 'lparen':
      return '"("';
    case 'rparen':
      return '")"';
    case 'not':
      return '"-"';
    case 'and':
      return '"AND"';
    case 'or':
      return '"OR"';
    case 'end':
      return 'end of query';
    case 'leaf':
      return 'term';
  }
}

const isSpace = (c: string | undefined): boolean => c !== undefined && /^\s$/u.test(c);
/** Ends a bare word: whitespace, a parenthesis, or the end of the text. */
const ends = (c: string | undefined): boolean => c === undefined || c === '(' || c === ')' || isSpace(c);
const OP_CHARS = new Set([':', '~', '<', '>', '=']);

class Parser {
  readonly #s: string[];
  #pos = 0;
  #ahead: Token | null = null;

  constructor(chars: string[]) {
    this.#s = chars;
  }

  peek(): Token {
    if (this.#ahead === null) this.#ahead = this.#lex();
    return this.#ahead;
  }

  next(): Token {
    const tok = this.peek();
    this.#ahead = null;
    return tok;
  }

  // ---- grammar ------------------------------------------------------------------------------

  /** or = and { "OR" and } */
  parseOr(depth: number): QueryNode {
    const items = [this.parseAnd(depth)];
    while (this.peek().t === 'or') {
      const or = this.next();
      const after = this.peek();
      if (after.t === 'end' || after.t === 'rparen' || after.t === 'or' || after.t === 'and') fail('"OR" needs a term on each side', or.col);
      items.push(this.parseAnd(depth));
    }
    return items.length === 1 ? items[0]! : { type: 'or', items };
  }

  /** and = unary { [ "AND" ] unary } */
  parseAnd(depth: number): QueryNode {
    const items = [this.parseUnary(depth)];
    for (;;) {
      const tok = this.peek();
      if (tok.t === 'end' || tok.t === 'rparen' || tok.t === 'or') break;
      if (tok.t === 'and') {
        this.next();
        const after = this.peek();
        if (after.t === 'end' || after.t === 'rparen' || after.t === 'or' || after.t === 'and') fail('"AND" needs a term on each side', tok.col);
      }
      items.push(this.parseUnary(depth));
    }
    return items.length === 1 ? items[0]! : { type: 'and', items };
  }

  /** unary = [ "-" ] primary */
  parseUnary(depth: number): QueryNode {
    const tok = this.peek();
    if (tok.t !== 'not') return this.parsePrimary(depth);
    this.next();
    const after = this.peek();
    if (after.t !== 'leaf' && after.t !== 'lparen') fail('"-" must be followed by a term or a group, as in -service:db or -(kind:incident OR note:*)', tok.col);
    if (depth + 1 > MAX_DEPTH) fail(`the query is nested too deeply (at most ${MAX_DEPTH} levels)`, tok.col);
    return { type: 'not', item: this.parsePrimary(depth + 1) };
  }

  /** primary = "(" or ")" | term */
  parsePrimary(depth: number): QueryNode {
    const tok = this.next();
    switch (tok.t) {
      case 'leaf':
        return tok.node;
      case 'lparen': {
        if (depth + 1 > MAX_DEPTH) fail(`the query is nested too deeply (at most ${MAX_DEPTH} levels)`, tok.col);
        if (this.peek().t === 'rparen') fail('empty parentheses "()"', tok.col);
        const inner = this.parseOr(depth + 1);
        const close = this.next();
        if (close.t !== 'rparen') fail('unclosed "(" (missing ")")', tok.col);
        return inner;
      }
      case 'rparen':
        return fail('unmatched ")"', tok.col);
      case 'and':
      case 'or':
        return fail(`${describe(tok)} needs a term on each side`, tok.col);
      case 'not':
        return fail('"-" must be followed by a term or a group', tok.col);
      case 'end':
        return fail('unexpected end of query', tok.col);
    }
  }

  // ---- tokens -------------------------------------------------------------------------------

  #lex(): Token {
    const s = this.#s;
    while (isSpace(s[this.#pos])) this.#pos++;
    const col = this.#pos + 1;
    const c = s[this.#pos];
    if (c === undefined) return { t: 'end', col };
    if (c === '(') {
      this.#pos++;
      return { t: 'lparen', col };
    }
    if (c === ')') {
      this.#pos++;
      return { t: 'rparen', col };
    }
    if (c === '-') {
      this.#pos++;
      const n = s[this.#pos];
      if (n === undefined || n === ')' || isSpace(n)) fail('"-" must be followed by a term or a group, as in -service:db or -(kind:incident OR note:*)', col);
      return { t: 'not', col };
    }
    if (c === '"') {
      const text = this.#quoted();
      if (!ends(s[this.#pos])) fail(`unexpected "${s[this.#pos]}" after the closing quote`, this.#pos + 1);
      return { t: 'leaf', col, node: { type: 'text', field: null, key: null, text } };
    }
    // A word: a term when it holds an operator character before any quote, else free text.
    let i = this.#pos;
    while (!ends(s[i]) && s[i] !== '"' && !OP_CHARS.has(s[i]!)) i++;
    if (s[i] !== undefined && OP_CHARS.has(s[i]!)) return this.#term(col, i);
    const start = this.#pos;
    const word = this.#bare();
    if (word === 'AND') return { t: 'and', col };
    if (word === 'OR') return { t: 'or', col };
    this.#noStarInText(word, start);
    return { t: 'leaf', col, node: { type: 'text', field: null, key: null, text: word } };
  }

  /** A bare word from the current position: up to whitespace, a parenthesis or the end. */
  #bare(): string {
    const s = this.#s;
    const start = this.#pos;
    while (!ends(s[this.#pos])) {
      if (s[this.#pos] === '"') fail('unexpected quote inside a word (quote the whole value, as in service:"my service")', this.#pos + 1);
      this.#pos++;
    }
    return s.slice(start, this.#pos).join('');
  }

  /** A double-quoted string at the current position, with \" and \\ escapes. */
  #quoted(): string {
    const s = this.#s;
    const open = this.#pos + 1;
    this.#pos++;
    let out = '';
    for (;;) {
      const c = s[this.#pos];
      if (c === undefined) fail('unclosed quote', open);
      if (c === '"') {
        this.#pos++;
        return out;
      }
      if (c === '\\') {
        const e = s[this.#pos + 1];
        if (e === undefined) fail('unclosed quote', open);
        if (e !== '"' && e !== '\\') fail(`unknown escape "\\${e}" in a quoted string (only \\" and \\\\ are allowed)`, this.#pos + 1);
        out += e;
        this.#pos += 2;
        continue;
      }
      out += c;
      this.#pos++;
    }
  }

  #noStarInText(word: string, start: number): void {
    const at = Array.from(word).indexOf('*');
    if (at >= 0) fail('"*" is not a wildcard in a text match (it already matches anywhere; use ? for any one character, or quote the "*")', start + at + 1);
  }

  /** `field op value`; `opAt` is the index of the first operator character. */
  #term(col: number, opAt: number): Token {
    const s = this.#s;
    const written = s.slice(this.#pos, opAt).join('');
    if (written === '') fail(`expected a field name before "${s[opAt]}"`, col);
    let op = s[opAt]!;
    if ((op === '<' || op === '>') && s[opAt + 1] === '=') op += '=';
    this.#pos = opAt + op.length;
    const field = this.#field(written, col);
    const opCol = opAt + 1;
    const valueCol = this.#pos + 1;
    const leaf = (node: LeafNode): Token => ({ t: 'leaf', col, node });

    if (op === '=') {
      const hint = field.name === 'duration' || field.name === 'opened' ? `${written}>5m` : `${written}:value`;
      fail(`"=" is not an operator (use ${hint})`, opCol);
    }
    if (field.name === 'duration' || field.name === 'opened') {
      if (op === ':' || op === '~') {
        const example = field.name === 'duration' ? 'duration>5m' : 'opened<7d';
        fail(`"${field.name}" needs a comparison such as ${example}`, col);
      }
      const value = this.#value(written + op);
      return leaf({ type: 'compare', field: field.name, op: op as CompareOp, ms: parseSpan(value.text, valueCol) });
    }
    if (field.name === 'last') {
      if (op !== ':') fail('"last" takes ":" and a time span, as in last:90d', col);
      const value = this.#value(written + op);
      return leaf({ type: 'last', ms: parseSpan(value.text, valueCol) });
    }
    if (op !== ':' && op !== '~') fail(`"${written}" can't be compared with "${op}" (use ${written}:value or ${written}~text)`, opCol);
    const name = field.name;
    const key = field.key;
    const value = this.#value(written + op);
    if (op === '~') {
      if (value.star !== null)
        fail('"*" is not a wildcard in a text match (it already matches anywhere; use ? for any one character, or quote the "*")', value.star);
      if (!value.quoted) this.#noStarInText(value.text, valueCol - 1);
      return leaf({ type: 'text', field: name, key, text: value.text });
    }
    let text = value.text;
    let prefix = value.star !== null;
    if (!value.quoted) {
      const cs = Array.from(text);
      const at = cs.indexOf('*');
      if (at >= 0 && at < cs.length - 1) fail('"*" is only allowed at the end of a value', valueCol + at);
      if (at === cs.length - 1) {
        prefix = true;
        text = cs.slice(0, -1).join('');
      }
    }
    if (!prefix) return leaf({ type: 'exact', field: name, key, value: text });
    if (text === '') return leaf({ type: 'present', field: name, key });
    return leaf({ type: 'prefix', field: name, key, prefix: text });
  }

  #field(written: string, col: number): { name: StringField | SpanField | 'last'; key: string | null } {
    const lower = written.toLowerCase();
    if (STRING_FIELDS.has(lower)) return { name: lower as StringField, key: null };
    if (lower === 'duration' || lower === 'opened' || lower === 'last') return { name: lower, key: null };
    if (lower.startsWith('data.')) {
      const key = written.slice(5);
      if (key === '') fail('expected a key after "data."', col + 5);
      if (!DATA_KEY.test(key)) {
        const bad = Array.from(key).findIndex((c) => !DATA_KEY.test(c));
        fail(`"${Array.from(key)[bad]}" can't be in a data key (use letters, digits, _ . - /)`, col + 5 + bad);
      }
      return { name: 'data', key };
    }
    if (lower === 'data') fail('"data" needs a key, as in data.env:prod', col);
    return fail(`unknown field "${written}"`, col);
  }

  /**
   * The value after an operator: a quoted string (optionally followed by `*`, whose column is
   * returned as `star`) or a bare word. `after` is what precedes it, for the error message.
   */
  #value(after: string): { text: string; quoted: boolean; star: number | null } {
    const s = this.#s;
    if (ends(s[this.#pos])) fail(`expected a value after "${after}"`, this.#pos + 1);
    if (s[this.#pos] === '"') {
      const text = this.#quoted();
      let star: number | null = null;
      if (s[this.#pos] === '*') {
        star = this.#pos + 1;
        this.#pos++;
      }
      if (!ends(s[this.#pos])) fail(`unexpected "${s[this.#pos]}" after the closing quote`, this.#pos + 1);
      return { text, quoted: true, star };
    }
    return { text: this.#bare(), quoted: false, star: null };
  }
}

/** A time span: a number (decimals allowed) and a unit s, m, h, d or w (none = seconds), in ms. */
function parseSpan(text: string, col: number): number {
  const m = DURATION.exec(text);
  if (m === null) fail(`"${text}" is not a duration (use a number with s, m, h, d or w)`, col);
  const ms = Math.round(Number(m[1]) * UNIT_MS[m[2] || 's']!);
  if (!Number.isSafeInteger(ms)) fail(`"${text}" is too long a time span`, col);
  return ms;
}
