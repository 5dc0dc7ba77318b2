import { AppError } from '../errors.ts';
import type { BrokenPlugin, LoadedPlugin } from '../plugins/loader.ts';
import type { ActionDeclaration, ConnectorPlugin, PackPlugin, ReadDeclaration, SettingsSchema } from '../plugins/contract.ts';
import { destinationPointers, fieldName, secretPointers, settingsValidator, type Pointer } from './settings-schema.ts';

/** A connector kind: the loaded plugin of that name, its schema, secrets and validator. */
export interface ConnectorKind {
  name: string;
  version: string;
  description: string | null;
  schema: SettingsSchema;
  /** The writeOnly fields of the schema. */
  pointers: Pointer[];
  /** The fields that say where requests go (settings-schema.ts `destinationPointers`): changing one needs the secrets again. */
  destinations: Pointer[];
  /** null when the settings fit the schema, else what is wrong, naming the field. */
  validate(settings: unknown): string | null;
  /** The default export: `test`, and the optional capabilities of the contract. */
  plugin: ConnectorPlugin & Record<string, unknown>;
  /** The action kinds its manifest declares (plugin API 1.2), by name. */
  actions: ReadonlyMap<string, KindAction>;
  /** The read capabilities it offers checks (its manifest's `reads`, plugin API 1.5; or, before, its export's `reads` array), by name. */
  reads: ReadonlyMap<string, KindRead>;
  /** For its capabilities with `named`: the loaded packs' declarations, by capability then `<pack>/<name>` (handed to `test`). */
  named: Record<string, Record<string, Record<string, unknown>>>;
}

/** A read capability of a connector kind, its schemas compiled once. A capability declared only in the old `reads` array has no schemas: nothing is validated. */
export interface KindRead {
  declaration: ReadDeclaration | null;
  /** null when a check's request fits the `request` schema, else what is wrong. */
  validateRequest(request: unknown): string | null;
  /** null when the connector's answer fits the `answer` schema, else what is wrong. */
  validateAnswer(answer: unknown): string | null;
  /** For a capability with `named`: null when a pack's declaration fits, else what is wrong; null itself when there is no `named`. */
  validateNamed: ((declared: unknown) => string | null) | null;
}

/**
 * One action kind of a connector kind: what its manifest declares, narrowed to what the plugin
 * can do (`rehearsable` only with a `rehearse` function, `reversible` only with `undo`), and the
 * validator of its params.
 */
export interface KindAction {
  declaration: ActionDeclaration;
  /** Why the action cannot be used at all (no `act` function, a params schema that does not compile), or null. */
  problem: string | null;
  /** null when `params` fit the declaration's schema, else what is wrong, naming the field (`params.duration_s must be <= 86400`). */
  validate(params: unknown): string | null;
}

/** What the catalogue shows of one kind. */
export interface CatalogueEntry {
  kind: string;
  version: string;
  description: string | null;
  /** The settings JSON Schema as the plugin declares it; secrets carry `"writeOnly": true`. */
  settings: SettingsSchema;
  /** The write-only fields, dotted (`password`, `auth.password`). */
  secrets: string[];
  /** What the kind can do: always `test`; `query`, `poll_alerts`, `discover` and `notify` when the plugin offers them. */
  capabilities: string[];
  /** The action kinds it performs (plugin API 1.2), as {@link KindAction} narrows them; `{}` for none. */
  actions: Record<string, ActionDeclaration>;
  /** The read capabilities it offers checks (plugin API 1.5), as its manifest declares them (null: declared before 1.5, without schemas). */
  reads: Record<string, ReadDeclaration | null>;
}

/** The connector kinds of the loaded plugins (the newest compatible version of each name). */
export class ConnectorKinds {
  readonly #kinds = new Map<string, ConnectorKind>();
  readonly #broken: BrokenPlugin[];

  constructor(loaded: LoadedPlugin[], broken: BrokenPlugin[] = []) {
    this.#broken = broken;
    const packs = loaded.filter((p) => p.kind === 'pack').map((p) => ({ name: p.name, named: (p.plugin as PackPlugin).named ?? {} }));
    for (const p of loaded) {
      if (p.kind !== 'connector' || p.manifest.settings === undefined) continue;
      const schema = p.manifest.settings;
      this.#kinds.set(p.name, {
        name: p.name,
        version: p.version,
        description: p.manifest.description ?? null,
        schema,
        pointers: secretPointers(schema),
        destinations: destinationPointers(schema),
        validate: settingsValidator(schema),
        plugin: p.plugin as ConnectorPlugin & Record<string, unknown>,
        actions: kindActions(p.manifest.actions ?? {}, p.plugin as Record<string, unknown>),
        ...kindReads(p.manifest.reads ?? {}, (p.plugin as { reads?: unknown }).reads, packs),
      });
    }
  }

  get(kind: string): ConnectorKind | null {
    return this.#kinds.get(kind) ?? null;
  }

  /** The kind, or 400 `unknown_kind` saying which kinds there are. */
  require(kind: string): ConnectorKind {
    const k = this.get(kind);
    if (k === null) throw new AppError('unknown_kind', `${this.missing(kind)}; known kinds: ${[...this.#kinds.keys()].sort().join(', ') || 'none'}`);
    return k;
  }

  /** Why a kind is not available: not loaded, or its plugin is broken (with the loader's problem). */
  missing(kind: string): string {
    const broken = this.#broken.find((b) => b.name === kind);
    return broken === undefined
      ? `no connector plugin of kind "${kind.slice(0, 64)}" is loaded`
      : `the connector plugin "${kind}" is broken: ${broken.problem}`;
  }

  catalogue(): CatalogueEntry[] {
    return [...this.#kinds.values()]
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .map((k) => ({
        kind: k.name,
        version: k.version,
        description: k.description,
        settings: k.schema,
        secrets: k.pointers.map((p) => fieldName(p).slice('settings.'.length)),
        capabilities: [
          'test',
          ...(typeof k.plugin.query === 'function' ? ['query'] : []),
          ...(typeof k.plugin.pollAlerts === 'function' ? ['poll_alerts'] : []),
          ...(typeof k.plugin.discover === 'function' ? ['discover'] : []),
          ...(typeof k.plugin.notify === 'function' ? ['notify'] : []),
        ],
        reads: Object.fromEntries([...k.reads].map(([name, r]) => [name, r.declaration])),
        actions: Object.fromEntries([...k.actions].map(([name, a]) => [name, a.declaration])),
      }));
  }
}

/** The manifest's action declarations, each checked against the plugin's methods and its params schema compiled once. */
function kindActions(declared: Record<string, ActionDeclaration>, plugin: Record<string, unknown>): Map<string, KindAction> {
  const out = new Map<string, KindAction>();
  for (const [name, d] of Object.entries(declared).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const declaration: ActionDeclaration = {
      description: d.description,
      params: d.params,
      rehearsable: d.rehearsable && typeof plugin.rehearse === 'function',
      reversible: d.reversible && typeof plugin.undo === 'function',
    };
    let validate: (params: unknown) => string | null = () => 'the action cannot be used';
    let problem: string | null = typeof plugin.act === 'function' ? null : `the plugin declares the action ${name} but has no act() function`;
    try {
      validate = settingsValidator(d.params, 'params');
    } catch (e) {
      problem ??= `the params schema of the action ${name} does not compile: ${(e instanceof Error ? e.message : String(e)).split('\n', 1)[0]!.slice(0, 300)}`;
    }
    out.set(name, { declaration, problem, validate });
  }
  return out;
}

/** The manifest's read declarations (and the old `reads` array), each schema compiled once; the packs' declarations for those with `named`. */
function kindReads(
  declared: Record<string, ReadDeclaration>,
  legacy: unknown,
  packs: Array<{ name: string; named: NonNullable<PackPlugin['named']> }>,
): { reads: Map<string, KindRead>; named: Record<string, Record<string, Record<string, unknown>>> } {
  const reads = new Map<string, KindRead>();
  const named: Record<string, Record<string, Record<string, unknown>>> = {};
  const any = () => null;
  for (const cap of Array.isArray(legacy) ? legacy.filter((x): x is string => typeof x === 'string') : [])
    reads.set(cap, { declaration: null, validateRequest: any, validateAnswer: any, validateNamed: null });
  for (const [cap, d] of Object.entries(declared).sort(([a], [b]) => (a < b ? -1 : 1))) {
    // The loader compiled each schema already (checks.ts), so these do not throw.
    reads.set(cap, {
      declaration: d,
      validateRequest: settingsValidator(d.request, 'request'),
      validateAnswer: settingsValidator(d.answer, 'answer'),
      validateNamed: d.named === undefined ? null : settingsValidator(d.named, `named ${cap}`),
    });
    if (d.named !== undefined) {
      const mine: Record<string, Record<string, unknown>> = {};
      for (const p of packs) for (const [name, v] of Object.entries(p.named[cap] ?? {})) mine[`${p.name}/${name}`] = v;
      if (Object.keys(mine).length > 0) named[cap] = mine;
    }
  }
  return { reads, named };
}
