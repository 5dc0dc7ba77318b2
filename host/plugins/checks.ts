import { readFile, realpath, stat } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { init as initLexer, parse as parseModule } from 'es-module-lexer';
import satisfies from 'semver/functions/satisfies.js';
import validRange from 'semver/ranges/valid.js';
import type { PluginKind, PluginManifest } from './contract.ts';
import { compiledName, MODULE_EXT } from '../compiled.ts';
import { clip } from '../text.ts';
import { checkCauses } from './pack-shape.ts';
import { PluginProblem } from './plugin-problem.ts';

/**
 * The compatibility steps a plugin folder goes through, in order. Each step either returns what
 * the next one needs or throws a PluginProblem saying what is wrong; the loader prefixes the
 * plugin's name and folder, so these messages only say what and why.
 */

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export const MANIFEST_FILE = 'plugin.json';
const MAX_MANIFEST_BYTES = 256 * 1024;
/** An entry whose import never settles (a top-level await that hangs) must not hold the host. */
const IMPORT_TIMEOUT_MS = 10_000;
const MAX_LISTED_ERRORS = 5;

const manifestSchema = JSON.parse(readFileSync(new URL('./manifest.schema.json', import.meta.url), 'utf8')) as Record<string, unknown>;
// strictRequired is off because the kind-dependent `required` lists sit in if/then/else branches,
// away from the `properties` that declare those fields. `verbose` gives errors their schema node,
// whose description is the message for the kind-dependent rules.
const checkManifestShape: ValidateFunction = new Ajv({ allErrors: true, strict: true, strictRequired: false, verbose: true }).compile(manifestSchema);

/** Step 1: `plugin.json` is readable and parses as JSON. */
export async function readManifest(dir: string): Promise<unknown> {
  const file = path.join(dir, MANIFEST_FILE);
  const info = await stat(file);
  if (info.size > MAX_MANIFEST_BYTES) throw new PluginProblem(`${MANIFEST_FILE} is larger than ${MAX_MANIFEST_BYTES / 1024} KiB`);
  const text = await readFile(file, 'utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new PluginProblem(`${MANIFEST_FILE} is not valid JSON (${firstLine(e)})`);
  }
}

/**
 * Step 2: the manifest matches manifest.schema.json. The message leads with the first bad field
 * and lists a few more, so a vendor can fix them in one go.
 */
export function validateManifest(raw: unknown): PluginManifest {
  if (checkManifestShape(raw)) return raw as PluginManifest;
  // An `if` error only repeats the then/else error before it.
  const errors = (checkManifestShape.errors ?? []).filter((e) => e.keyword !== 'if');
  const shown = errors.slice(0, MAX_LISTED_ERRORS).map(describe);
  const more = errors.length > MAX_LISTED_ERRORS ? ` (and ${errors.length - MAX_LISTED_ERRORS} more)` : '';
  throw new PluginProblem(`${MANIFEST_FILE} is not a valid manifest: ${shown.join('; ') || 'it does not match the manifest schema'}${more}`);
}

function describe(e: ErrorObject): string {
  const at = (field?: string) => (field === undefined ? e.instancePath : `${e.instancePath}/${field}`) || '/';
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return `${at(String(params.missingProperty))} is required`;
    case 'additionalProperties':
      return `${at(String(params.additionalProperty))} is not a manifest field`;
    case 'enum':
      return `${at()} must be one of ${(params.allowedValues as unknown[]).join(', ')}`;
    case 'not': {
      const why = (e.parentSchema as { description?: unknown } | undefined)?.description;
      return typeof why === 'string' ? why : `${at()} ${e.message ?? 'is not valid'}`;
    }
    default:
      return `${at()} ${e.message ?? 'is not valid'}`;
  }
}

/** Step 3: the plugin's `api` range accepts the host's plugin API version. */
export function checkApiRange(manifest: PluginManifest, hostApi: string): void {
  if (validRange(manifest.api) === null) throw new PluginProblem(`api "${manifest.api}" is not a semver range`);
  if (!satisfies(hostApi, manifest.api)) {
    throw new PluginProblem(`api range "${manifest.api}" does not accept this host's plugin API ${hostApi}`);
  }
}

/** How this process runs modules: compiled (host/compiled.ts), and whether Node.js strips types in it. */
export interface EntryRuntime {
  compiled: boolean;
  typescript: boolean;
}
const HOST_RUNTIME: EntryRuntime = { compiled: MODULE_EXT === '.js', typescript: process.features.typescript !== false };

/**
 * Step 4: `entry` names a file inside the plugin folder (no `..`, no absolute path, no symlink out).
 * Where the host runs compiled (the release package, host/compiled.ts), a TypeScript entry runs
 * from its compiled file beside it when there is one (`index.ts` → `index.js`): the package ships
 * its plugins and packs so. Without one, a Node.js without type stripping (the package's start
 * command) cannot run the entry, and says so here.
 */
export async function resolveEntry(dir: string, entry: string, runtime: EntryRuntime = HOST_RUNTIME): Promise<string> {
  const named = path.resolve(dir, entry);
  if (!isInside(dir, named)) throw new PluginProblem(`entry "${entry}" points outside the plugin folder`);
  const js = runtime.compiled ? compiledName(named) : null;
  const file = js !== null && (await isFile(js)) ? js : named;
  let info;
  try {
    info = await stat(file);
  } catch {
    throw new PluginProblem(`entry "${entry}" does not exist`);
  }
  if (!info.isFile()) throw new PluginProblem(`entry "${entry}" is not a file`);
  if (js !== null && file === named && !runtime.typescript)
    throw new PluginProblem(
      `entry "${entry}" is TypeScript, which this service, started without type stripping (the release package, docs/install.md), cannot run: ` +
        `put its compiled ${path.basename(js)} beside it (tsc with rewriteRelativeImportExtensions), or name a JavaScript entry`,
    );
  if (!isInside(await realpath(dir), await realpath(file))) throw new PluginProblem(`entry "${entry}" links outside the plugin folder`);
  return file;
}

async function isFile(file: string): Promise<boolean> {
  return stat(file).then(
    (s) => s.isFile(),
    () => false,
  );
}

function isInside(dir: string, file: string): boolean {
  const rel = path.relative(dir, file);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

/** Step 5: a connector's `settings` is a JSON Schema of an object that ajv compiles. */
export function checkSettingsSchema(manifest: PluginManifest): void {
  if (manifest.settings === undefined) return;
  if (manifest.settings.type !== 'object') throw new PluginProblem('settings must be a JSON Schema with "type": "object"');
  const settings = compileProblem(manifest.settings, false);
  if (settings !== null) throw new PluginProblem(`settings is not a usable JSON Schema (${settings})`);
  for (const [cap, d] of Object.entries(manifest.reads ?? {}))
    for (const part of ['request', 'answer', 'named'] as const) {
      const schema = d[part];
      if (schema === undefined) continue;
      const problem = compileProblem(schema, true);
      if (problem !== null) throw new PluginProblem(`reads.${cap}.${part} is not a usable JSON Schema (${problem})`);
    }
}

/** What compiling each schema said in this process, by its JSON text (null: it compiles), bounded. */
const COMPILE_PROBLEMS = new Map<string, string | null>();
const COMPILE_PROBLEMS_MAX = 1000;

/**
 * Whether ajv (strict) compiles `schema`, asked once per schema text in this process: every app
 * built in one process checks the same plugins, and compiling was most of the time it took. A
 * fresh instance per schema: two versions of one connector may carry the same $id. Only the
 * answer is kept, not the validator (as settings-schema.ts keeps its): the check's strict
 * validators are never used again, and keeping them held 1.6 MB for the shipped connectors.
 */
function compileProblem(schema: object, allowUnionTypes: boolean): string | null {
  const key = `${String(allowUnionTypes)}\n${JSON.stringify(schema)}`;
  if (COMPILE_PROBLEMS.has(key)) return COMPILE_PROBLEMS.get(key)!;
  let problem: string | null = null;
  try {
    addFormats(new Ajv({ strict: true, allowUnionTypes, allErrors: true, logger: false })).compile(schema);
  } catch (e) {
    problem = firstLine(e);
  }
  if (COMPILE_PROBLEMS.size >= COMPILE_PROBLEMS_MAX) COMPILE_PROBLEMS.delete(COMPILE_PROBLEMS.keys().next().value!);
  COMPILE_PROBLEMS.set(key, problem);
  return problem;
}

/** The contract module: the one file outside its folder a plugin may name, and only in `import type`. */
const CONTRACT_FILE = 'contract.ts';
/** Modules the import scan reads (others inside the folder, such as JSON, are allowed but not read). */
const SCANNED = /\.(ts|mts|cts|js|mjs|cjs)$/;
/** A URL scheme (`data:`, `http:`, `file:`); `node:` builtins are allowed, every other scheme is not. */
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/**
 * Step 6: the plugin stands alone. The entry and every relative module it imports (recursively,
 * within the folder) are read with es-module-lexer, before anything runs; every `import`,
 * `export ... from` and `import()` must name a module inside the folder, a package (a bare
 * specifier) or a `node:` builtin. The one exception is `import type` (or `export type`) of the
 * plugin contract (`contract.ts`), erased when the plugin runs. An `import()` of a computed
 * specifier cannot be checked and is refused.
 */
export async function checkImports(dir: string, entryFile: string): Promise<void> {
  await initLexer();
  const root = await realpath(dir);
  const seen = new Set<string>();
  const queue = [entryFile];
  while (queue.length > 0) {
    const file = queue.shift()!;
    const real = await realpath(file);
    if (seen.has(real)) continue;
    seen.add(real);
    const shown = path.relative(root, real).split(path.sep).join('/');
    let imports;
    try {
      imports = parseModule(await readFile(real, 'utf8'), shown)[0];
    } catch (e) {
      throw new PluginProblem(`${shown} cannot be read for its imports (${firstLine(e)})`);
    }
    for (const imp of imports) {
      if (imp.type === 'import-meta') continue;
      const spec = imp.specifier;
      if (spec === undefined || (imp.type === 'dynamic' && imp.glob))
        throw new PluginProblem(`${shown} has an import() of a computed specifier, which cannot be checked; import a fixed path`);
      if (spec.startsWith('node:')) continue;
      const isPath = spec.startsWith('.') || spec.startsWith('/') || spec.startsWith('file:');
      if (!isPath && !SCHEME.test(spec)) continue; // a package
      if (!isPath) throw new PluginProblem(`${shown} imports "${spec}"; a plugin imports only files in its folder, packages and node: builtins`);
      let target: string;
      try {
        target = spec.startsWith('file:') ? fileURLToPath(spec) : path.resolve(path.dirname(real), spec);
      } catch {
        throw new PluginProblem(`${shown} imports "${spec}", which is not a file path`);
      }
      const typeOnly = imp.type !== 'dynamic' && imp.typeOnly;
      if (typeOnly && path.basename(target) === CONTRACT_FILE) continue;
      if (!isInside(root, target)) {
        throw new PluginProblem(
          `${shown} imports "${spec}", which is outside the plugin folder; a plugin folder must stand alone (only \`import type\` of the plugin contract may leave it)`,
        );
      }
      if (typeOnly || !SCANNED.test(target)) continue;
      let targetReal: string;
      try {
        targetReal = await realpath(target);
      } catch {
        throw new PluginProblem(`${shown} imports "${spec}", which does not exist`);
      }
      if (!isInside(root, targetReal)) throw new PluginProblem(`${shown} imports "${spec}", which links outside the plugin folder`);
      queue.push(targetReal);
    }
  }
}

/** Step 7: the entry module imports; a throw (or a hang) while it loads is caught here. */
export async function importEntry(file: string, entry: string): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new PluginProblem(`entry "${entry}" did not finish loading within ${IMPORT_TIMEOUT_MS / 1000} s`)), IMPORT_TIMEOUT_MS);
    timer.unref();
  });
  let mod: { default?: unknown };
  try {
    mod = (await Promise.race([import(pathToFileURL(file).href), timeout])) as { default?: unknown };
  } catch (e) {
    if (e instanceof PluginProblem) throw e;
    throw new PluginProblem(`entry "${entry}" failed to import (${firstLine(e)})`);
  } finally {
    clearTimeout(timer);
  }
  if (mod.default === undefined || mod.default === null) throw new PluginProblem(`entry "${entry}" has no default export`);
  return mod.default;
}

/** What each kind's default export must carry: a function, or for packs an array. */
const REQUIRED: Record<PluginKind, { functions: string[]; arrays: string[]; optionalFunctions: string[] }> = {
  normaliser: { functions: ['normalise', 'detect'], arrays: [], optionalFunctions: [] },
  connector: { functions: ['test'], arrays: [], optionalFunctions: [] },
  pack: { functions: [], arrays: ['causes'], optionalFunctions: [] },
};

/** Step 8: the default export has what its kind needs (see contract.ts). */
export function checkExports(kind: PluginKind, entry: string, plugin: unknown, packName = ''): void {
  if (typeof plugin !== 'object' || plugin === null) throw new PluginProblem(`the default export of "${entry}" is not an object`);
  const p = plugin as Record<string, unknown>;
  const needs = REQUIRED[kind];
  for (const name of needs.functions) {
    if (typeof p[name] !== 'function') throw new PluginProblem(`the default export of "${entry}" has no ${name}() function, which every ${kind} needs`);
  }
  for (const name of needs.arrays) {
    if (!Array.isArray(p[name])) throw new PluginProblem(`the default export of "${entry}" has no ${name} array, which every ${kind} needs`);
  }
  if (kind === 'pack' && Array.isArray(p.causes)) checkCauses(packName, p);
  for (const name of needs.optionalFunctions) {
    if (p[name] !== undefined && typeof p[name] !== 'function')
      throw new PluginProblem(`the default export of "${entry}" has a ${name} that is not a function`);
  }
}

function firstLine(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  const line = text.split('\n', 1)[0]!.trim();
  return clip(line, 300, '…');
}
