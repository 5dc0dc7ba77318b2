import { AppError } from '../errors.ts';
import type { BrokenPlugin, LoadedPlugin } from '../plugins/loader.ts';
import type { ActionDeclaration, ConnectorPlugin, SettingsSchema } from '../plugins/contract.ts';
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
}

/** The connector kinds of the loaded plugins (the newest compatible version of each name). */
export class ConnectorKinds {
  readonly #kinds = new Map<string, ConnectorKind>();
  readonly #broken: BrokenPlugin[];

  constructor(loaded: LoadedPlugin[], broken: BrokenPlugin[] = []) {
    this.#broken = broken;
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
