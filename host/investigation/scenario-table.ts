import path from 'node:path';
import { silentLogger } from '../log.ts';
import { loadPlugins } from '../plugins/loader.ts';
import { CauseCatalogue } from './catalogue.ts';
import { loadScenarios, replayScenario } from './replay.ts';

export const TABLE_START = '<!-- scenarios:start (written by `npm run docs:packs`; a test fails when it is out of date) -->';
export const TABLE_END = '<!-- scenarios:end -->';

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/**
 * The published table of docs/packs.md: per cause of every pack in `dirs`, each scenario it ships
 * and the verdict the cause reaches on it, replayed now (so the table cannot drift from the code).
 */
export async function scenarioTable(dirs: string[]): Promise<string> {
  const registry = await loadPlugins({ dirs, log: silentLogger() });
  const lines = ['| Cause | Scenario | Verdict | Obstacle |', '|---|---|---|---|'];
  for (const p of registry.loaded.filter((l) => l.kind === 'pack')) {
    const catalogue = new CauseCatalogue({ loaded: [p], broken: [], superseded: [] });
    const scenarios = loadScenarios(p.dir);
    for (const cause of catalogue.causes) {
      for (const s of scenarios.get(cause.id) ?? []) {
        const v = await replayScenario(cause, s);
        lines.push(`| \`${cause.id}\` | ${cell(s.name)} | ${v.verdict} | ${v.obstacle ?? ''} |`);
      }
    }
  }
  return lines.join('\n');
}

/** `text` with the part between the markers replaced by `table`. */
export function withTable(text: string, table: string): string {
  const a = text.indexOf(TABLE_START);
  const b = text.indexOf(TABLE_END);
  if (a < 0 || b < a) throw new Error(`docs/packs.md lacks the markers ${TABLE_START} ... ${TABLE_END}`);
  return `${text.slice(0, a + TABLE_START.length)}\n\n${table}\n\n${text.slice(b)}`;
}

/** The shipped packs' folder. */
export const PACKS_DIR = path.resolve(import.meta.dirname, '../../packs');
