import { isDeepStrictEqual } from 'node:util';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import { schemaValidator } from '../json-schema.ts';
import type { RecordEvent } from '../ledger/ledger.service.ts';
import type { SecretCipher } from '../secrets/cipher.ts';
import type { Trx } from '../storage/db.ts';
import { NAME_PATTERN } from './connectors.file.ts';
import type { ConnectorsRepo } from './connectors.repo.ts';
import type { ConnectorStore } from './connectors.store.ts';
import type { ConnectorKinds } from './kinds.ts';
import { splitSecrets } from './secrets.ts';
import { fieldName } from './settings-schema.ts';

/** One connector as the keychain carries it: settings whole, secrets in the clear (only ever in memory or encrypted). */
export interface CarriedConnector {
  name: string;
  kind: string;
  settings: Record<string, unknown>;
}

const carried = schemaValidator<{ connectors: CarriedConnector[] }>({
  type: 'object',
  additionalProperties: false,
  required: ['connectors'],
  properties: {
    connectors: {
      type: 'array',
      maxItems: 1000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'kind', 'settings'],
        properties: {
          name: { type: 'string', pattern: NAME_PATTERN.source },
          kind: { type: 'string', minLength: 1, maxLength: 100 },
          settings: { type: 'object' },
        },
      },
    },
  },
});

/**
 * The connectors part of the keychain (docs/keychain.md): the console-added connectors with their
 * secrets, and applying them on a member. Applied, the member's console connectors become exactly
 * the carried ones (each validated against this install's plugins; secrets sealed with this
 * install's key); a name connectors.json manages here stays as the file says. Each change is a
 * `config.connector_saved` or `config.connector_removed` event by the keychain, without secrets.
 */
export class CarriedConnectors {
  readonly #store: ConnectorStore;
  readonly #repo: ConnectorsRepo;
  readonly #cipher: SecretCipher;
  readonly #kinds: ConnectorKinds;
  readonly #clock: Clock;

  constructor(deps: { store: ConnectorStore; repo: ConnectorsRepo; cipher: SecretCipher; kinds: ConnectorKinds; clock: Clock }) {
    this.#store = deps.store;
    this.#repo = deps.repo;
    this.#cipher = deps.cipher;
    this.#kinds = deps.kinds;
    this.#clock = deps.clock;
  }

  /** The console-added connectors, secrets opened (one whose secrets cannot be opened goes without them). */
  async export(trx?: Trx): Promise<{ connectors: CarriedConnector[] }> {
    const out: CarriedConnector[] = [];
    for (const row of await this.#repo.list(trx)) {
      if (this.#store.isFileManaged(row.name)) continue;
      const r = this.#store.fromRow(row);
      out.push({ name: row.name, kind: row.kind, settings: r.settings ?? row.settings });
    }
    return { connectors: out };
  }

  async apply(trx: Trx, record: RecordEvent, data: unknown, actor: string): Promise<Record<string, unknown>> {
    const wanted = carried(data).connectors;
    const at = this.#clock.now().toISOString();
    const existing = new Map((await this.#repo.list(trx)).map((r) => [r.name, r]));
    const added: string[] = [];
    const updated: string[] = [];
    const removed: string[] = [];
    const fileManaged: string[] = [];
    // Every connector is checked before any is written: all of the part or none of it.
    const checked = wanted.map((c) => {
      const type = this.#kinds.get(c.kind);
      if (type === null) throw new AppError('unknown_kind', `connector ${c.name}: no plugin of this install serves the kind ${c.kind}`);
      const problem = type.validate(c.settings);
      if (problem !== null) throw new AppError('invalid_settings', `connector ${c.name}: ${problem}`);
      return { c, type };
    });
    for (const { c, type } of checked) {
      if (this.#store.isFileManaged(c.name)) {
        fileManaged.push(c.name);
        continue;
      }
      const old = existing.get(c.name);
      const before = old === undefined || old.kind !== c.kind ? null : this.#store.fromRow(old);
      if (before !== null && before.fault === null && isDeepStrictEqual(before.settings, c.settings)) continue;
      const { plain, secrets } = splitSecrets(c.settings, type.pointers);
      const sealed: Record<string, string> = {};
      for (const [p, v] of secrets) sealed[p] = this.#cipher.encrypt(JSON.stringify(v));
      await this.#repo.upsert(trx, {
        name: c.name,
        kind: c.kind,
        settings: plain,
        secrets: sealed,
        created_at: old?.created_at ?? at,
        updated_at: at,
        updated_by: actor,
      });
      await this.#repo.clearStatus(trx, c.name);
      (old === undefined ? added : updated).push(c.name);
      await record({
        type: 'config.connector_saved',
        actor,
        reason: `${old === undefined ? 'connector added' : 'connector updated'} by the keychain: ${c.name} (${c.kind})`,
        data: {
          name: c.name,
          kind: c.kind,
          created: old === undefined,
          via: 'keychain',
          settings: plain,
          secrets_set: type.pointers.filter((p) => secrets.has(p)).map((p) => fieldName(p).slice('settings.'.length)),
          checked_by_test: null,
        },
      });
    }
    const names = new Set(wanted.map((c) => c.name));
    for (const [name, row] of existing) {
      if (names.has(name) || this.#store.isFileManaged(name)) continue;
      await this.#repo.remove(trx, name);
      removed.push(name);
      await record({
        type: 'config.connector_removed',
        actor,
        reason: `connector removed by the keychain: ${name} (${row.kind})`,
        data: { name, kind: row.kind, via: 'keychain' },
      });
    }
    return { connectors: wanted.length, added, updated, removed, file_managed: fileManaged };
  }
}
