import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { SettingsSchema } from '../plugins/contract.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** A JSON pointer (`/password`, `/auth/password`) into a settings object. */
export type Pointer = string;

type Schema = { type?: unknown; properties?: Record<string, Schema>; writeOnly?: unknown; format?: unknown; 'x-destination'?: unknown };

/**
 * The fields a kind's settings schema marks `"writeOnly": true`, as JSON pointers: properties
 * at any depth of nested `properties`. A write-only object is one secret as a whole.
 */
export function secretPointers(schema: SettingsSchema): Pointer[] {
  const out: Pointer[] = [];
  const walk = (s: Schema, at: string): void => {
    if (s.properties === undefined || typeof s.properties !== 'object') return;
    for (const [key, sub] of Object.entries(s.properties)) {
      if (typeof sub !== 'object' || sub === null) continue;
      const p = `${at}/${escape(key)}`;
      if (sub.writeOnly === true) out.push(p);
      else walk(sub, p);
    }
  };
  walk(schema as Schema, '');
  return out;
}

/** Formats whose value says where a request goes. */
const DESTINATION_FORMATS = new Set(['uri', 'uri-reference', 'iri', 'iri-reference', 'hostname', 'idn-hostname', 'ipv4', 'ipv6']);
/** Names whose value says where a request goes: `url`, `base_url`, `host`, `smtp_host`, `address`, `endpoint`, … */
const DESTINATION_NAME = /^(?:url|uri|host|hostname|address|endpoint|server|remote)$|_(?:url|uri|host|hostname|address|endpoint|server|remote)$/i;

/**
 * The non-secret fields that say where a connector's requests, and so its secrets, are sent: a
 * property marked `"x-destination": true`, else one with a URL or host `format`, else one named
 * like an address (`url`, `base_url`, `host`, `*_endpoint`, …), unless marked
 * `"x-destination": false`. A stored secret is kept on update only while these stay as they were
 * (connectors.store.ts), so re-pointing a connector cannot send its stored password elsewhere.
 */
export function destinationPointers(schema: SettingsSchema): Pointer[] {
  const out: Pointer[] = [];
  const walk = (s: Schema, at: string): void => {
    if (s.properties === undefined || typeof s.properties !== 'object') return;
    for (const [key, sub] of Object.entries(s.properties)) {
      if (typeof sub !== 'object' || sub === null || sub.writeOnly === true) continue;
      const p = `${at}/${escape(key)}`;
      const marked = sub['x-destination'];
      if (marked === true || (marked !== false && ((typeof sub.format === 'string' && DESTINATION_FORMATS.has(sub.format)) || DESTINATION_NAME.test(key))))
        out.push(p);
      walk(sub, p);
    }
  };
  walk(schema as Schema, '');
  return out;
}

const escape = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');
const unescape = (key: string) => key.replaceAll('~1', '/').replaceAll('~0', '~');

/** The keys of a pointer (`/a/b` -> [a, b]). */
export function keysOf(p: Pointer): string[] {
  return p.split('/').slice(1).map(unescape);
}

/** Dotted form of a pointer for messages: `settings.auth.password` (`root` names the object: `params.duration_s`). */
export function fieldName(p: Pointer, root = 'settings'): string {
  return [root, ...keysOf(p)].join('.');
}

/**
 * A validator of one kind's settings: ajv (strict off, so a vendor's annotation keywords pass;
 * formats on; no coercion, no defaults). The error names the first bad field, never its value.
 * `root` names the object in messages (`settings`, or `params` for an action's parameters).
 * Throws when the schema itself does not compile.
 */
export function settingsValidator(schema: SettingsSchema, root = 'settings'): (settings: unknown) => string | null {
  const check = compiledOnce(schema);
  return (settings) => (check(settings) ? null : describe(check.errors ?? [], root));
}

/** Validators compiled in this process, by the schema's JSON text (bounded: the oldest go first). */
const COMPILED = new Map<string, ValidateFunction>();
const COMPILED_MAX = 1000;

/**
 * Compiles a schema once per process: every app built in one process (each test's, the CLI's)
 * loads the same plugins, and compiling their schemas was most of the time it took to build one.
 * The same text gives the same validator; a fresh ajv per schema, so two schemas with one `$id`
 * never meet. A validator sets its `errors` on each call and they are read right after it, with
 * nothing awaited between, so sharing one is safe.
 */
function compiledOnce(schema: SettingsSchema): ValidateFunction {
  const key = JSON.stringify(schema);
  let check = COMPILED.get(key);
  if (check === undefined) {
    check = addFormats(new Ajv({ allErrors: false, strict: false, coerceTypes: false, useDefaults: false, logger: false })).compile(schema);
    if (COMPILED.size >= COMPILED_MAX) COMPILED.delete(COMPILED.keys().next().value!);
    COMPILED.set(key, check);
  }
  return check;
}

function describe(errors: ErrorObject[], root: string): string {
  const e = errors[0];
  if (e === undefined) return `${root} are not valid`;
  const where = e.instancePath === '' ? root : fieldName(e.instancePath, root);
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'additionalProperties':
      return `${where}: unknown field ${String(params.additionalProperty)}`;
    case 'required':
      return `${where}.${String(params.missingProperty)} is required`;
    default:
      // ajv's messages name the rule (type, format, pattern, limits, allowed values), never the data.
      return `${where} ${e.message ?? 'is not valid'}`;
  }
}
