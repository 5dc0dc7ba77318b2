import type { Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config.ts';
// The one function used, not the whole semver package (docs/performance.md, "Idle memory").
import rcompare from 'semver/functions/rcompare.js';
import type { Logger } from '../log.ts';
import { PLUGIN_API_VERSION } from '../version.ts';
import {
  checkApiRange,
  checkExports,
  checkImports,
  checkSettingsSchema,
  importEntry,
  MANIFEST_FILE,
  readManifest,
  resolveEntry,
  validateManifest,
} from './checks.ts';
import type { PluginKind, PluginManifest } from './contract.ts';

/** A plugin that passed every step and won its name: its entry's default export is `plugin`. */
export interface LoadedPlugin {
  name: string;
  version: string;
  kind: PluginKind;
  dir: string;
  manifest: PluginManifest;
  plugin: unknown;
}

/** A plugin folder that failed a step; `problem` names the plugin (or folder) and what is wrong. */
export interface BrokenPlugin {
  dir: string;
  name: string | null;
  version: string | null;
  problem: string;
}

/** A valid plugin not used because a newer version of the same name and kind was found. */
export interface SupersededPlugin {
  name: string;
  version: string;
  dir: string;
  /** The version used instead. */
  by: string;
}

export interface PluginRegistry {
  loaded: LoadedPlugin[];
  broken: BrokenPlugin[];
  superseded: SupersededPlugin[];
}

/** Where plugins come from: the repo's plugins/ and packs/, then SERVICE_PLUGINS_DIR (vendors' own). */
export function pluginDirs(config: Pick<Config, 'pluginsDir'>): string[] {
  const repo = (p: string) => fileURLToPath(new URL(`../../${p}/`, import.meta.url));
  return [repo('plugins'), repo('packs'), ...(config.pluginsDir === null ? [] : [config.pluginsDir])];
}

/** How deep below a plugins directory a plugin folder may sit (`normalisers/<name>` is 2). */
const MAX_DEPTH = 3;

/**
 * Finds every plugin folder below `dirs`, checks each one and keeps the newest valid version of
 * each name. Never throws: a broken plugin is logged, reported in `broken` and skipped.
 */
export async function loadPlugins(opts: { dirs: string[]; log: Logger; hostApi?: string }): Promise<PluginRegistry> {
  const { log } = opts;
  const hostApi = opts.hostApi ?? PLUGIN_API_VERSION;
  const { folders, broken } = await discover(opts.dirs);
  const valid: LoadedPlugin[] = [];
  for (const dir of folders) {
    const outcome = await checkPlugin(dir, hostApi);
    if ('problem' in outcome) broken.push(outcome);
    else valid.push(outcome);
  }
  const { loaded, superseded } = newestOfEachName(valid);

  for (const b of broken) log.warn({ plugin: { dir: b.dir, name: b.name, version: b.version } }, b.problem);
  for (const s of superseded) log.info({ plugin: s }, `plugin ${s.name} ${s.version} skipped: ${s.by} is newer`);
  for (const p of loaded) log.info({ plugin: { dir: p.dir, name: p.name, version: p.version, kind: p.kind } }, `plugin ${p.name} ${p.version} loaded`);

  return {
    loaded: loaded.sort((a, b) => byText(a.name, b.name) || byText(a.kind, b.kind)),
    broken: broken.sort((a, b) => byText(a.dir, b.dir)),
    superseded: superseded.sort((a, b) => byText(a.name, b.name) || rcompare(a.version, b.version) || byText(a.dir, b.dir)),
  };
}

/** Runs the steps of checks.ts in order; the first failure makes the plugin broken. */
async function checkPlugin(dir: string, hostApi: string): Promise<LoadedPlugin | BrokenPlugin> {
  let raw: unknown;
  try {
    raw = await readManifest(dir);
    const manifest = validateManifest(raw);
    checkApiRange(manifest, hostApi);
    const file = await resolveEntry(dir, manifest.entry);
    checkSettingsSchema(manifest);
    await checkImports(dir, file);
    const plugin = await importEntry(file, manifest.entry);
    checkExports(manifest.kind, manifest.entry, plugin, manifest.name);
    return { name: manifest.name, version: manifest.version, kind: manifest.kind, dir, manifest, plugin };
  } catch (e) {
    const name = textField(raw, 'name');
    const version = textField(raw, 'version');
    const what = e instanceof Error ? e.message : String(e);
    return { dir, name, version, problem: `${label(dir, name, version)}: ${what}` };
  }
}

function label(dir: string, name: string | null, version: string | null): string {
  if (name === null) return `plugin folder ${dir}`;
  return `plugin "${name}"${version === null ? '' : ` ${version}`} in ${dir}`;
}

/** A manifest field for the report, even from a manifest that failed validation. */
function textField(raw: unknown, key: string): string | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const v = (raw as Record<string, unknown>)[key];
  return typeof v === 'string' && v.length > 0 ? v.slice(0, 100) : null;
}

/**
 * Newest version per name and kind (a source may well have both a normaliser and a connector of
 * one name). Equal versions: the one found first, that is in the earlier directory, wins.
 */
function newestOfEachName(valid: LoadedPlugin[]): { loaded: LoadedPlugin[]; superseded: SupersededPlugin[] } {
  const groups = new Map<string, LoadedPlugin[]>();
  for (const p of valid) {
    const key = `${p.kind}/${p.name}`;
    groups.set(key, [...(groups.get(key) ?? []), p]);
  }
  const loaded: LoadedPlugin[] = [];
  const superseded: SupersededPlugin[] = [];
  for (const group of groups.values()) {
    const [winner, ...rest] = [...group].sort((a, b) => rcompare(a.version, b.version));
    loaded.push(winner!);
    for (const p of rest) superseded.push({ name: p.name, version: p.version, dir: p.dir, by: winner!.version });
  }
  return { loaded, superseded };
}

/**
 * Plugin folders (those holding plugin.json) up to MAX_DEPTH below each directory, in directory
 * order then name order. A missing directory is empty; one that cannot be read is reported.
 * A folder reached twice (overlapping directories, symlinks) counts once.
 */
async function discover(dirs: string[]): Promise<{ folders: string[]; broken: BrokenPlugin[] }> {
  const folders: string[] = [];
  const broken: BrokenPlugin[] = [];
  const seen = new Set<string>();

  const walk = async (dir: string, depth: number): Promise<void> => {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      broken.push({ dir, name: null, version: null, problem: `plugin folder ${dir} cannot be read (${String(code ?? e)})` });
      return;
    }
    if (depth > 0 && entries.some((d) => d.name === MANIFEST_FILE && !d.isDirectory())) {
      const real = await realpath(dir).catch(() => dir);
      if (!seen.has(real)) {
        seen.add(real);
        folders.push(dir);
      }
      return;
    }
    if (depth === MAX_DEPTH) return;
    const children = entries.filter((d) => !d.name.startsWith('.') && d.name !== 'node_modules').sort((a, b) => byText(a.name, b.name));
    for (const d of children) {
      const child = path.join(dir, d.name);
      if (d.isDirectory() || (d.isSymbolicLink() && (await isDirectory(child)))) await walk(child, depth + 1);
    }
  };

  for (const dir of dirs) await walk(path.resolve(dir), 0);
  return { folders, broken };
}

async function isDirectory(p: string): Promise<boolean> {
  return stat(p).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
