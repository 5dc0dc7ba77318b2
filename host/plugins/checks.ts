import { readFile, realpath, stat } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import semver from 'semver';
import type { PluginKind, PluginManifest } from './contract.ts';
import { clip } from '../text.ts';

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

/** What is wrong with a plugin, in words a vendor can act on. */
export class PluginProblem extends Error {}

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
  if (semver.validRange(manifest.api) === null) throw new PluginProblem(`api "${manifest.api}" is not a semver range`);
  if (!semver.satisfies(hostApi, manifest.api)) {
    throw new PluginProblem(`api range "${manifest.api}" does not accept this host's plugin API ${hostApi}`);
  }
}

/** Step 4: `entry` names a file inside the plugin folder (no `..`, no absolute path, no symlink out). */
export async function resolveEntry(dir: string, entry: string): Promise<string> {
  const file = path.resolve(dir, entry);
  if (!isInside(dir, file)) throw new PluginProblem(`entry "${entry}" points outside the plugin folder`);
  let info;
  try {
    info = await stat(file);
  } catch {
    throw new PluginProblem(`entry "${entry}" does not exist`);
  }
  if (!info.isFile()) throw new PluginProblem(`entry "${entry}" is not a file`);
  if (!isInside(await realpath(dir), await realpath(file))) throw new PluginProblem(`entry "${entry}" links outside the plugin folder`);
  return file;
}

function isInside(dir: string, file: string): boolean {
  const rel = path.relative(dir, file);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

/** Step 5: a connector's `settings` is a JSON Schema of an object that ajv compiles. */
export function checkSettingsSchema(manifest: PluginManifest): void {
  if (manifest.settings === undefined) return;
  if (manifest.settings.type !== 'object') throw new PluginProblem('settings must be a JSON Schema with "type": "object"');
  // A fresh instance per plugin: two versions of one connector may carry the same $id.
  const ajv = addFormats(new Ajv({ strict: true, allErrors: true, logger: false }));
  try {
    ajv.compile(manifest.settings);
  } catch (e) {
    throw new PluginProblem(`settings is not a usable JSON Schema (${firstLine(e)})`);
  }
}

/** Step 6: the entry module imports; a throw (or a hang) while it loads is caught here. */
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
  pack: { functions: [], arrays: ['checks'], optionalFunctions: [] },
};

/** Step 7: the default export has what its kind needs (see contract.ts). */
export function checkExports(kind: PluginKind, entry: string, plugin: unknown): void {
  if (typeof plugin !== 'object' || plugin === null) throw new PluginProblem(`the default export of "${entry}" is not an object`);
  const p = plugin as Record<string, unknown>;
  const needs = REQUIRED[kind];
  for (const name of needs.functions) {
    if (typeof p[name] !== 'function') throw new PluginProblem(`the default export of "${entry}" has no ${name}() function, which every ${kind} needs`);
  }
  for (const name of needs.arrays) {
    if (!Array.isArray(p[name])) throw new PluginProblem(`the default export of "${entry}" has no ${name} array, which every ${kind} needs`);
  }
  for (const name of needs.optionalFunctions) {
    if (p[name] !== undefined && typeof p[name] !== 'function') throw new PluginProblem(`the default export of "${entry}" has a ${name} that is not a function`);
  }
}

function firstLine(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  const line = text.split('\n', 1)[0]!.trim();
  return clip(line, 300, '…');
}
