import { isDeepStrictEqual } from 'node:util';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Principal } from '../identity/principal.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { SecretCipher } from '../secrets/cipher.ts';
import { NAME_PATTERN, resolveEnvRef, type ConnectorsFile } from './connectors.file.ts';
import type { ConnectorRow, ConnectorsRepo, ConnectorStatus } from './connectors.repo.ts';
import type { ConnectorKind, ConnectorKinds } from './kinds.ts';
import { clone, getAt, joinSecrets, maskSecrets, secretInput, setAt, splitSecrets } from './secrets.ts';
import { fieldName, type Pointer } from './settings-schema.ts';
import { statusOfTest, type TestMemory } from './test-memory.ts';

export type ConnectorSource = 'console' | 'file';

/** One configured connector as every answer shows it: secrets masked as `{"set": boolean}`. */
export interface ConnectorView {
  name: string;
  kind: string;
  source: ConnectorSource;
  /** The version of the plugin that serves the kind, or null when no such plugin is loaded. */
  version: string | null;
  settings: Record<string, unknown>;
  /** `ok` or `problem` after a check; `unchecked` before the first; `problem` for a configuration fault. */
  state: 'ok' | 'problem' | 'unchecked';
  /** What is wrong now: a configuration fault, else the last check's problem; null when fine. */
  last_problem: string | null;
  last_checked_at: string | null;
  /** What the last check found (version, ...), or null. */
  found: Record<string, unknown> | null;
  /** Console-added only: when and by whom last saved; null for file-managed connectors. */
  updated_at: string | null;
  updated_by: string | null;
}

export interface ConnectorInput {
  kind: string;
  settings: Record<string, unknown>;
}

/** A configured connector with its secrets in the clear: only ever held in memory. */
export interface Resolved {
  name: string;
  kind: string;
  source: ConnectorSource;
  type: ConnectorKind | null;
  /** Complete settings, secrets included (null when a fault stops them being put together). */
  settings: Record<string, unknown> | null;
  /** Which secret pointers are set (for the mask). */
  secretsSet: Set<Pointer>;
  /** Non-secret settings, for the mask. */
  plain: Record<string, unknown>;
  fault: string | null;
  row: ConnectorRow | null;
}

/** Names the API's own paths use under /v1/connectors/. */
const RESERVED_NAMES = new Set(['catalogue', 'test']);

export interface ConnectorStoreDeps {
  repo: ConnectorsRepo;
  cipher: SecretCipher;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  kinds: ConnectorKinds;
  file: ConnectorsFile;
  env: NodeJS.ProcessEnv;
  tests: TestMemory;
}

/**
 * The configured connectors and their secrets: console-added ones (the `connectors` table,
 * secrets sealed by the cipher) and the file-managed ones of connectors.json (`{"env": ...}`
 * secrets read from the environment). Adds, updates and removes console connectors, resolves
 * any connector to its settings in the clear (in memory only), and shows each masked.
 */
export class ConnectorStore {
  private readonly repo: ConnectorsRepo;
  private readonly cipher: SecretCipher;
  private readonly ledger: Ledger;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly kinds: ConnectorKinds;
  private readonly file: ConnectorsFile;
  private readonly env: NodeJS.ProcessEnv;
  private readonly tests: TestMemory;

  constructor(deps: ConnectorStoreDeps) {
    this.repo = deps.repo;
    this.cipher = deps.cipher;
    this.ledger = deps.ledger;
    this.clock = deps.clock;
    this.log = deps.log;
    this.kinds = deps.kinds;
    this.file = deps.file;
    this.env = deps.env;
    this.tests = deps.tests;
  }

  /** Whether a name is defined in connectors.json (the API then answers 409 to changes). */
  isFileManaged(name: string): boolean {
    return this.file.connectors.some((c) => c.name === name);
  }

  async list(): Promise<{ connectors: ConnectorView[]; file: { path: string; problem: string | null } | null }> {
    const [all, statuses] = await Promise.all([this.all(), this.repo.statuses()]);
    return {
      connectors: all.map((r) => this.view(r, statuses.get(r.name) ?? null)),
      file: this.file.path === null ? null : { path: this.file.path, problem: this.file.problem },
    };
  }

  /** Every configured connector (file first where a name is in both), by name. */
  async all(): Promise<Resolved[]> {
    const rows = await this.repo.list();
    const all = [...this.file.connectors.map((c) => this.fromFile(c.name)!), ...rows.filter((r) => !this.isFileManaged(r.name)).map((r) => this.fromRow(r))];
    return all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async get(name: string): Promise<ConnectorView> {
    const r = await this.resolve(name);
    return this.view(r, await this.repo.status(name));
  }

  /** Adds or updates a console connector; answers whether it was created. */
  async put(name: string, input: ConnectorInput, who: Principal): Promise<{ created: boolean; connector: ConnectorView }> {
    if (!NAME_PATTERN.test(name))
      throw new AppError('invalid_connector_name', 'a connector name is lower case: a letter or digit, then up to 62 letters, digits and hyphens');
    if (RESERVED_NAMES.has(name)) throw new AppError('invalid_connector_name', `"${name}" is reserved by the API (/v1/connectors/${name})`);
    if (this.isFileManaged(name))
      throw new AppError('connector_file_managed', `connector ${name} is defined in connectors.json in SERVICE_CONFIG_DIR; change it there`);
    const type = this.kinds.require(input.kind);
    const stored = await this.repo.get(name);
    const before = stored !== null && stored.kind === input.kind ? this.fromRow(stored) : null;
    if (before !== null && before.fault !== null && before.settings === null) {
      // Stored secrets that cannot be opened (the secret key changed) are not kept.
      this.log.warn({ connector: name }, 'stored secrets of the connector cannot be opened; they must be given again');
    }
    const settings = this.merge(type, input.settings, before?.settings ?? null);
    // The same settings again (a GET answer sent back): nothing is saved, the last check stands.
    if (before !== null && before.fault === null && before.settings !== null && isDeepStrictEqual(settings, before.settings)) {
      return { created: false, connector: await this.get(name) };
    }
    const { plain, secrets } = splitSecrets(settings, type.pointers);
    const sealed: Record<string, string> = {};
    for (const [p, v] of secrets) sealed[p] = this.cipher.encrypt(JSON.stringify(v));
    const at = this.clock.now().toISOString();
    // Saved right after a test of exactly these settings: that test is its first check.
    const tested = this.tests.recall(input.kind, settings);
    const row: ConnectorRow = {
      name,
      kind: input.kind,
      settings: plain,
      secrets: sealed,
      created_at: stored?.created_at ?? at,
      updated_at: at,
      updated_by: who.actor,
    };
    await this.ledger.transact(async (trx, record) => {
      await this.repo.upsert(trx, row);
      if (tested === null) await this.repo.clearStatus(trx, name);
      else await this.repo.putStatus(statusOfTest(name, tested, input.kind), trx);
      await record({
        type: 'config.connector_saved',
        actor: who.actor,
        reason: `${stored === null ? 'connector added' : 'connector updated'}: ${name} (${input.kind})`,
        data: {
          name,
          kind: input.kind,
          created: stored === null,
          // Only the non-secret settings, and which secrets are set: never a secret's value.
          settings: plain,
          secrets_set: type.pointers.filter((p) => secrets.has(p)).map((p) => fieldName(p).slice('settings.'.length)),
          checked_by_test: tested === null ? null : { ok: tested.ok, checked_at: tested.checked_at },
        },
      });
    });
    this.log.info({ connector: name, kind: input.kind, created: stored === null }, 'connector saved');
    return { created: stored === null, connector: await this.get(name) };
  }

  async remove(name: string, who: Principal): Promise<{ name: string; removed: true }> {
    if (this.isFileManaged(name))
      throw new AppError('connector_file_managed', `connector ${name} is defined in connectors.json in SERVICE_CONFIG_DIR; remove it there`);
    const stored = NAME_PATTERN.test(name) ? await this.repo.get(name) : null;
    if (stored === null) throw new AppError('not_found', 'no such connector');
    await this.ledger.transact(async (trx, record) => {
      await this.repo.remove(trx, name);
      await record({
        type: 'config.connector_removed',
        actor: who.actor,
        reason: `connector removed: ${name} (${stored.kind})`,
        data: { name, kind: stored.kind },
      });
    });
    this.log.info({ connector: name, kind: stored.kind }, 'connector removed');
    return { name, removed: true };
  }

  /**
   * Settings of an update merged with the saved ones: non-secret fields as given; a secret
   * omitted, blank or given as its mask keeps the saved value, unless a field saying where
   * requests go changed (400 `secret_required` naming the secret); null clears it. Validated
   * against the kind's schema (400 `invalid_settings` naming the field).
   */
  merge(type: ConnectorKind, given: Record<string, unknown>, saved: Record<string, unknown> | null): Record<string, unknown> {
    const out = clone(given);
    // Where the requests go now differs from where the stored secrets were entered for: a
    // stored secret is never sent to an address it was not given for (an admin could otherwise
    // read a write-only password by re-pointing the connector at a server of their own).
    const moved = saved === null ? undefined : type.destinations.find((d) => !isDeepStrictEqual(getAt(given, d) ?? null, getAt(saved, d) ?? null));
    for (const p of type.pointers) {
      const input = secretInput(getAt(given, p));
      if ('value' in input) continue;
      const stored = 'keep' in input && saved !== null ? getAt(saved, p) : undefined;
      if (stored !== undefined && moved !== undefined) {
        throw new AppError(
          'secret_required',
          `${fieldName(p)} must be given again: ${fieldName(moved)} changed, and a stored secret is only ever sent where it was entered for`,
        );
      }
      setAt(out, p, stored);
    }
    const problem = type.validate(out);
    if (problem !== null) throw new AppError('invalid_settings', problem);
    return out;
  }

  async resolve(name: string): Promise<Resolved> {
    const fromFile = this.fromFile(name);
    if (fromFile !== null) return fromFile;
    const row = NAME_PATTERN.test(name) ? await this.repo.get(name) : null;
    if (row === null) throw new AppError('not_found', 'no such connector');
    return this.fromRow(row);
  }

  fromRow(row: ConnectorRow): Resolved {
    const type = this.kinds.get(row.kind);
    const secrets = new Map<Pointer, unknown>();
    let fault: string | null = null;
    for (const [p, sealed] of Object.entries(row.secrets)) {
      try {
        secrets.set(p, JSON.parse(this.cipher.decrypt(sealed)));
      } catch {
        fault ??= `the stored secret ${fieldName(p)} cannot be decrypted (was SERVICE_SECRET_KEY changed?); give it again`;
      }
    }
    const base = { name: row.name, kind: row.kind, source: 'console' as const, type, plain: row.settings, secretsSet: new Set(secrets.keys()), row };
    if (type === null) return { ...base, settings: null, fault: this.kinds.missing(row.kind) };
    if (fault !== null) return { ...base, settings: null, fault };
    const settings = joinSecrets(row.settings, secrets);
    const invalid = type.validate(settings);
    return { ...base, settings, fault: invalid === null ? null : `the saved settings no longer fit plugin ${type.name} ${type.version}: ${invalid}` };
  }

  fromFile(name: string): Resolved | null {
    const c = this.file.connectors.find((f) => f.name === name);
    if (c === undefined) return null;
    const type = c.kind === '' ? null : this.kinds.get(c.kind);
    const base = { name: c.name, kind: c.kind, source: 'file' as const, type, row: null };
    const pointers = type?.pointers ?? [];
    const plainOf = () => splitSecrets(c.settings, pointers).plain;
    const setOf = () => new Set(pointers.filter((p) => getAt(c.settings, p) !== undefined));
    if (c.problem !== null) return { ...base, settings: null, plain: plainOf(), secretsSet: setOf(), fault: c.problem };
    if (type === null) return { ...base, settings: null, plain: plainOf(), secretsSet: setOf(), fault: this.kinds.missing(c.kind) };
    const settings = clone(c.settings);
    let fault: string | null = null;
    for (const p of pointers) {
      const v = getAt(settings, p);
      if (v === undefined) continue;
      const r = resolveEnvRef(v, fieldName(p), this.env);
      if ('problem' in r) fault ??= `connectors.json: ${r.problem}`;
      else setAt(settings, p, r.value);
    }
    if (fault === null) {
      const invalid = type.validate(settings);
      if (invalid !== null) fault = `connectors.json: ${invalid}`;
    }
    return { ...base, settings: fault === null ? settings : null, plain: plainOf(), secretsSet: setOf(), fault };
  }

  view(r: Resolved, status: ConnectorStatus | null): ConnectorView {
    const s = status !== null && status.kind === r.kind ? status : null;
    const lastProblem = r.fault ?? (s === null ? null : s.last_problem);
    return {
      name: r.name,
      kind: r.kind,
      source: r.source,
      version: r.type?.version ?? null,
      settings: maskSecrets(r.plain, r.type?.pointers ?? [], (p) => r.secretsSet.has(p)),
      state: r.fault !== null ? 'problem' : s === null ? 'unchecked' : s.ok ? 'ok' : 'problem',
      last_problem: lastProblem,
      last_checked_at: s?.last_checked_at ?? null,
      found: s?.found ?? null,
      updated_at: r.row?.updated_at ?? null,
      updated_by: r.row?.updated_by ?? null,
    };
  }
}
