import { AppError } from '../errors.ts';
import type { BrokenPlugin, LoadedPlugin } from '../plugins/loader.ts';
import type { ConnectorPlugin, SettingsSchema } from '../plugins/contract.ts';
import { fieldName, secretPointers, settingsValidator, type Pointer } from './settings-schema.ts';

/** A connector kind: the loaded plugin of that name, its schema, secrets and validator. */
export interface ConnectorKind {
  name: string;
  version: string;
  description: string | null;
  schema: SettingsSchema;
  /** The writeOnly fields of the schema. */
  pointers: Pointer[];
  /** null when the settings fit the schema, else what is wrong, naming the field. */
  validate(settings: unknown): string | null;
  /** The default export: `test`, and the optional capabilities of the contract. */
  plugin: ConnectorPlugin & Record<string, unknown>;
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
        validate: settingsValidator(schema),
        plugin: p.plugin as ConnectorPlugin & Record<string, unknown>,
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
      }));
  }
}
