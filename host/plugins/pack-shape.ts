import { parseMatchers } from '../matchers.ts';
import { CAPABILITY_NAME } from './capabilities.ts';
import { PluginProblem } from './plugin-problem.ts';

const CAUSE_ID = /^[a-z][a-z0-9-]{1,63}\/[a-z][a-z0-9-]{0,63}$/;
const MAX_CAUSES = 200;

/**
 * Step 9 for packs: every cause is well formed (contract.ts `CauseDefinition`): its id is
 * `<pack>/<cause>` and unique, it has a title, a specificity 1-100, a `check` function, an
 * applicability the host can read (label matchers parse), known capabilities and plain
 * settings. One malformed cause makes the pack broken, so a vendor sees it at once.
 */
export function checkCauses(pack: string, plugin: Record<string, unknown>): void {
  const causes = plugin.causes as unknown[];
  if (causes.length === 0) throw new PluginProblem('the pack declares no causes');
  if (causes.length > MAX_CAUSES) throw new PluginProblem(`the pack declares ${causes.length} causes; at most ${MAX_CAUSES}`);
  const seen = new Set<string>();
  causes.forEach((raw, i) => {
    const where = `causes[${i}]`;
    if (typeof raw !== 'object' || raw === null) throw new PluginProblem(`${where} is not an object`);
    const c = raw as Record<string, unknown>;
    if (typeof c.id !== 'string' || !CAUSE_ID.test(c.id)) throw new PluginProblem(`${where}.id must be "<pack>/<cause>" in lower case`);
    const shown = `cause ${c.id}`;
    if (!c.id.startsWith(`${pack}/`)) throw new PluginProblem(`${shown}: its id must start with the pack's name "${pack}/"`);
    if (seen.has(c.id)) throw new PluginProblem(`${shown} is declared twice`);
    seen.add(c.id);
    if (typeof c.title !== 'string' || c.title.trim() === '' || c.title.length > 200)
      throw new PluginProblem(`${shown}: title must be text of 1-200 characters`);
    if (!Number.isInteger(c.specificity) || (c.specificity as number) < 1 || (c.specificity as number) > 100)
      throw new PluginProblem(`${shown}: specificity must be an integer 1-100`);
    if (typeof c.check !== 'function') throw new PluginProblem(`${shown} has no check() function`);
    if (
      c.explains !== undefined &&
      (!Array.isArray(c.explains) || c.explains.length > 50 || !c.explains.every((x) => typeof x === 'string' && CAUSE_ID.test(x)))
    )
      throw new PluginProblem(`${shown}: explains must be a list of at most 50 cause ids`);
    checkReads(shown, c.reads);
    checkApplies(shown, c.applies);
    checkSettings(shown, c.settings);
  });
  checkNamed(plugin.named);
}

/**
 * A cause's `reads` are capability names (plugin API 1.5: any a loaded connector declares); which
 * of them something loaded offers is checked once every plugin is loaded (capabilities.ts
 * `withDeclaredReads`).
 */
function checkReads(shown: string, reads: unknown): void {
  if (!Array.isArray(reads)) throw new PluginProblem(`${shown}: reads must be an array (empty when it reads only the signals and the estate)`);
  if (reads.length > 20) throw new PluginProblem(`${shown}: reads names ${reads.length} capabilities; at most 20`);
  for (const r of reads)
    if (typeof r !== 'string' || !CAPABILITY_NAME.test(r))
      throw new PluginProblem(`${shown}: reads names "${String(r).slice(0, 40)}", which is not a capability name (lower case, such as metrics or sql)`);
}

/** A pack's `named` declarations (plugin API 1.5): by capability, then by name, each an object. */
export function checkNamed(named: unknown): void {
  if (named === undefined) return;
  if (typeof named !== 'object' || named === null || Array.isArray(named)) throw new PluginProblem('named must be an object of capabilities');
  for (const [cap, byName] of Object.entries(named)) {
    if (!CAPABILITY_NAME.test(cap)) throw new PluginProblem(`named.${cap.slice(0, 40)} is not a capability name`);
    if (typeof byName !== 'object' || byName === null || Array.isArray(byName))
      throw new PluginProblem(`named.${cap} must be an object of declarations by name`);
    for (const [name, v] of Object.entries(byName)) {
      if (!/^[a-z][a-z0-9-]{0,63}$/.test(name)) throw new PluginProblem(`named.${cap}.${name.slice(0, 40)}: a declaration's name must be lower case`);
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new PluginProblem(`named.${cap}.${name} must be an object`);
      if (JSON.stringify(v).length > 64 * 1024) throw new PluginProblem(`named.${cap}.${name} is larger than 64 KiB`);
    }
  }
}

function checkApplies(shown: string, applies: unknown): void {
  if (typeof applies !== 'object' || applies === null || Array.isArray(applies)) throw new PluginProblem(`${shown}: applies must be an object`);
  const a = applies as Record<string, unknown>;
  const known = ['always', 'alerts', 'labels', 'technologies'];
  for (const k of Object.keys(a)) if (!known.includes(k)) throw new PluginProblem(`${shown}: applies.${k.slice(0, 40)} is not one of ${known.join(', ')}`);
  if (a.always !== undefined && typeof a.always !== 'boolean') throw new PluginProblem(`${shown}: applies.always must be true or false`);
  for (const k of ['alerts', 'labels', 'technologies']) {
    const v = a[k];
    if (v === undefined) continue;
    if (!Array.isArray(v) || v.length > 100 || !v.every((x) => typeof x === 'string' && x.length > 0 && x.length <= 1000))
      throw new PluginProblem(`${shown}: applies.${k} must be a list of at most 100 texts`);
  }
  for (const l of (a.labels as string[] | undefined) ?? []) {
    const m = parseMatchers(l);
    if (!m.ok) throw new PluginProblem(`${shown}: applies.labels "${l.slice(0, 80)}": ${m.problem}`);
  }
  if (a.always !== true && !['alerts', 'labels', 'technologies'].some((k) => ((a[k] as unknown[] | undefined) ?? []).length > 0))
    throw new PluginProblem(`${shown}: applies names no condition (give always: true, alerts, labels or technologies)`);
}

function checkSettings(shown: string, settings: unknown): void {
  if (settings === undefined) return;
  if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) throw new PluginProblem(`${shown}: settings must be an object`);
  for (const [k, v] of Object.entries(settings)) {
    if (!/^[a-z][a-z0-9_]{0,63}$/.test(k)) throw new PluginProblem(`${shown}: setting "${k.slice(0, 40)}" must be a lower-case name`);
    if (!['number', 'string', 'boolean'].includes(typeof v) || (typeof v === 'number' && !Number.isFinite(v)))
      throw new PluginProblem(`${shown}: setting ${k} must be a number, a text or true/false`);
  }
}
