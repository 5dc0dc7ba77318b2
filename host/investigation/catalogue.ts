import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { CauseDefinition, PackPlugin, ReadCapability } from '../plugins/contract.ts';
import type { PluginRegistry } from '../plugins/loader.ts';
import { applicability, type Applicability } from './applies.ts';

/** A cause of a loaded pack, ready to run. */
export interface Cause {
  id: string;
  title: string;
  pack: string;
  specificity: number;
  /** Causes it explains when both hold on a common subject (it then ranks above them). */
  explains: string[];
  reads: ReadCapability[];
  /** Its pack's declarations for capabilities that read only declared things (`sql` statements), by capability then name. */
  named: Readonly<Record<string, Readonly<Record<string, Record<string, unknown>>>>>;
  defaults: Record<string, number | string | boolean>;
  applies: Applicability;
  check: CauseDefinition['check'];
}

/** A pack as `GET /v1/packs` and `oncall packs list` show it. */
export interface PackView {
  name: string | null;
  version: string | null;
  causes: Array<{ id: string; title: string; reads: ReadCapability[]; specificity: number; settings: Record<string, number | string | boolean> }>;
  state: 'loaded' | 'broken';
  problem: string | null;
  dir: string;
}

/**
 * The causes of every loaded pack (the loader already checked each one, pack-shape.ts) and the
 * packs as people see them, broken ones with their problem. Built once at start: packs change
 * with a restart, as every plugin does.
 */
export class CauseCatalogue {
  readonly causes: readonly Cause[];
  readonly packs: readonly PackView[];
  readonly #byId: Map<string, Cause>;

  constructor(registry: PluginRegistry) {
    const causes: Cause[] = [];
    const packs: PackView[] = [];
    for (const p of registry.loaded) {
      if (p.kind !== 'pack') continue;
      const defs = (p.plugin as PackPlugin).causes;
      const named = structuredClone((p.plugin as PackPlugin).named ?? {});
      for (const d of defs) {
        causes.push({
          id: d.id,
          title: d.title,
          pack: p.name,
          specificity: d.specificity,
          explains: [...(d.explains ?? [])],
          reads: [...d.reads],
          named,
          defaults: { ...(d.settings ?? {}) },
          applies: applicability(d.applies),
          check: d.check.bind(d),
        });
      }
      packs.push({
        name: p.name,
        version: p.version,
        causes: defs.map((d) => ({ id: d.id, title: d.title, reads: [...d.reads], specificity: d.specificity, settings: { ...(d.settings ?? {}) } })),
        state: 'loaded',
        problem: null,
        dir: p.dir,
      });
    }
    for (const b of registry.broken) {
      if (!isPackDir(b.dir)) continue;
      packs.push({ name: b.name, version: b.version, causes: [], state: 'broken', problem: b.problem.split(b.dir).join(path.basename(b.dir)), dir: b.dir });
    }
    this.causes = causes.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    this.packs = packs.sort((a, b) => (a.name ?? '').localeCompare(b.name ?? '') || a.dir.localeCompare(b.dir));
    this.#byId = new Map(this.causes.map((c) => [c.id, c]));
  }

  get(id: string): Cause | null {
    return this.#byId.get(id) ?? null;
  }
}

/** A broken plugin is listed among packs when its manifest said `kind: "pack"` (read again: it may not have parsed). */
function isPackDir(dir: string): boolean {
  try {
    const raw = JSON.parse(readFileSync(path.join(dir, 'plugin.json'), 'utf8')) as { kind?: unknown };
    return raw.kind === 'pack';
  } catch {
    return /(^|[/\\])packs[/\\]/.test(dir);
  }
}
