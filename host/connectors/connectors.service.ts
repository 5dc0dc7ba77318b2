import { isDeepStrictEqual } from 'node:util';
import canonicalize from 'canonicalize';
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Principal } from '../http/guard.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { ConnectorQueryRequest, DiscoveredService, NotifyMessage } from '../plugins/contract.ts';
import type { SecretCipher } from '../secrets/cipher.ts';
import { NAME_PATTERN, resolveEnvRef, type ConnectorsFile } from './connectors.file.ts';
import type { ConnectorRow, ConnectorsRepo, ConnectorStatus } from './connectors.repo.ts';
import { ConnectorKinds, type ConnectorKind } from './kinds.ts';
import { cutOffMs, runGuarded } from './runner.ts';
import { clone, getAt, joinSecrets, maskSecrets, scrubJson, scrubText, secretInput, secretStrings, setAt, splitSecrets } from './secrets.ts';
import { fieldName, type Pointer } from './settings-schema.ts';
import { clip } from '../text.ts';

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

/** What a test or check answers: a failure is data (200), with the reason. */
export interface TestReport {
  ok: boolean;
  problem: string | null;
  kind: string;
  version: string;
  found: Record<string, unknown> | null;
  took_ms: number;
  /** The cut-off the call ran under. */
  timeout_s: number;
  checked_at: string;
}

export interface QueryReport {
  ok: boolean;
  problem: string | null;
  data: unknown;
  took_ms: number;
  timeout_s: number;
}

export interface ConnectorInput {
  kind: string;
  settings: Record<string, unknown>;
}

/** A configured connector with its secrets in the clear: only ever held in memory. */
interface Resolved {
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
const MAX_FOUND_BYTES = 8 * 1024;
const MAX_DATA_BYTES = 1024 * 1024;
const MAX_PROBLEM = 1000;
/** A test counts as the saved connector's first check when it is saved within this time of it. */
export const TEST_REMEMBERED_MS = 15 * 60 * 1000;
const TESTS_REMEMBERED = 200;

export interface ConnectorServiceDeps {
  repo: ConnectorsRepo;
  cipher: SecretCipher;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  kinds: ConnectorKinds;
  file: ConnectorsFile;
  /** Where `{"env": "VAR"}` secrets of connectors.json are read; default process.env. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Configured connectors: console-added ones (the `connectors` table, secrets sealed) and the
 * file-managed ones of connectors.json; their tests, checks and read-only queries, each cut off
 * at its timeout; and the last problem of each.
 */
export class ConnectorService {
  readonly kinds: ConnectorKinds;
  private readonly repo: ConnectorsRepo;
  private readonly cipher: SecretCipher;
  private readonly ledger: Ledger;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly file: ConnectorsFile;
  private readonly env: NodeJS.ProcessEnv;
  /**
   * Recent test outcomes in this process, by a hash of the kind and complete settings (secrets
   * included, never stored as such): a save of exactly the settings just tested records that
   * test as the connector's last check instead of "not checked since saved".
   */
  readonly #tested = new Map<string, TestReport>();

  constructor(deps: ConnectorServiceDeps) {
    this.repo = deps.repo;
    this.cipher = deps.cipher;
    this.ledger = deps.ledger;
    this.clock = deps.clock;
    this.log = deps.log.child({ component: 'connectors' });
    this.kinds = deps.kinds;
    this.file = deps.file;
    this.env = deps.env ?? process.env;
    if (this.file.problem !== null) this.log.error({ file: this.file.path }, this.file.problem);
    for (const c of this.file.connectors) if (c.problem !== null) this.log.error({ file: this.file.path, connector: c.name }, c.problem);
  }

  /** Whether a name is defined in connectors.json (the API then answers 409 to changes). */
  isFileManaged(name: string): boolean {
    return this.file.connectors.some((c) => c.name === name);
  }

  async list(): Promise<{ connectors: ConnectorView[]; file: { path: string; problem: string | null } | null }> {
    const [rows, statuses] = await Promise.all([this.repo.list(), this.repo.statuses()]);
    const all = [...this.file.connectors.map((c) => this.#fromFile(c.name)!), ...rows.filter((r) => !this.isFileManaged(r.name)).map((r) => this.#fromRow(r))];
    all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return {
      connectors: all.map((r) => this.#view(r, statuses.get(r.name) ?? null)),
      file: this.file.path === null ? null : { path: this.file.path, problem: this.file.problem },
    };
  }

  /**
   * Whether some connector can read a service's signals: today, whether any configured connector
   * passed its last check (which service each one covers comes with the estate).
   */
  async covers(_service: string): Promise<boolean> {
    return (await this.list()).connectors.some((c) => c.state === 'ok');
  }

  async get(name: string): Promise<ConnectorView> {
    const r = await this.#resolve(name);
    return this.#view(r, await this.repo.status(name));
  }

  /**
   * Tests settings without saving them. With `name` of a saved connector of the same kind,
   * omitted or blank secrets are taken from it, and when the settings tested are exactly the
   * saved ones the outcome becomes its last check.
   */
  async test(input: ConnectorInput & { name?: string }, who: Principal): Promise<TestReport> {
    const type = this.kinds.require(input.kind);
    let saved: Resolved | null = null;
    if (input.name !== undefined && NAME_PATTERN.test(input.name)) {
      saved = await this.#resolve(input.name).catch(() => null);
      if (saved !== null && saved.kind !== input.kind) saved = null;
    }
    const settings = this.#merge(type, input.settings, saved?.settings ?? null);
    const report = await this.#runTest(input.name ?? null, type, settings);
    this.#remember(input.kind, settings, report);
    const sameAsSaved = saved !== null && saved.settings !== null && canonicalize(saved.settings) === canonicalize(settings);
    await this.ledger.transact(async (trx, record) => {
      if (sameAsSaved) await this.repo.putStatus(this.#status(saved!.name, report), trx);
      await record({
        type: 'connector.tested',
        actor: who.actor,
        reason: report.ok ? `${input.kind} connector test passed` : `${input.kind} connector test failed: ${report.problem}`,
        data: { name: input.name ?? null, kind: input.kind, ok: report.ok, problem: report.problem, saved_status_updated: sameAsSaved },
      });
    });
    return report;
  }

  /** Tests a configured connector as saved (or as its file says) and records the outcome as its last check. */
  async check(name: string, who: Principal | null): Promise<ConnectorView & { check: TestReport | null }> {
    const r = await this.#resolve(name);
    let report: TestReport | null = null;
    if (r.fault === null && r.type !== null && r.settings !== null) {
      report = await this.#runTest(name, r.type, r.settings);
      const status = this.#status(name, report, r.kind);
      if (who === null) await this.repo.putStatus(status);
      else {
        await this.ledger.transact(async (trx, record) => {
          await this.repo.putStatus(status, trx);
          await record({
            type: 'connector.checked',
            actor: who.actor,
            reason: report!.ok ? `connector ${name} is healthy` : `connector ${name}: ${report!.problem}`,
            data: { name, kind: r.kind, source: r.source, ok: report!.ok, problem: report!.problem },
          });
        });
      }
    }
    return { ...this.#view(r, await this.repo.status(name)), check: report };
  }

  /**
   * The scheduled re-check (host/connectors/checker.ts): tests the connector as saved and
   * records the outcome as its last check. A ledger event (`connector.checked`, actor `system`)
   * is written only when the state changes (first check, ok → problem, problem → ok), so a
   * healthy estate does not fill the audit log.
   */
  async checkOnSchedule(name: string): Promise<{ ok: boolean | null; changed: boolean }> {
    const r = await this.#resolve(name);
    if (r.fault !== null || r.type === null || r.settings === null) return { ok: null, changed: false };
    const report = await this.#runTest(name, r.type, r.settings);
    const status = this.#status(name, report, r.kind);
    return this.ledger.transact(async (trx, record) => {
      const before = await this.repo.status(name, trx);
      await this.repo.putStatus(status, trx);
      const changed = before === null || before.ok !== report.ok;
      if (changed) {
        await record({
          type: 'connector.checked',
          actor: 'system',
          reason: report.ok ? `scheduled check: connector ${name} is healthy` : `scheduled check: connector ${name}: ${report.problem}`,
          data: { name, kind: r.kind, source: r.source, ok: report.ok, problem: report.problem, scheduled: true },
        });
      }
      return { ok: report.ok, changed };
    });
  }

  /** Every configured connector's name (file and console). */
  async names(): Promise<string[]> {
    return (await this.list()).connectors.map((c) => c.name);
  }

  /** Runs a read-only query on a configured connector. */
  async query(name: string, request: ConnectorQueryRequest, who: Principal): Promise<QueryReport> {
    const r = await this.#resolve(name);
    if (r.fault !== null || r.type === null || r.settings === null) throw new AppError('invalid_settings', `connector ${name} cannot be used: ${r.fault ?? 'its settings are incomplete'}`);
    const fn = r.type.plugin.query;
    if (typeof fn !== 'function') throw new AppError('query_not_supported', `connectors of kind ${r.kind} do not answer queries`);
    const timeoutMs = cutOffMs(r.settings);
    const secrets = this.#secretValues(r.type, r.settings);
    const started = performance.now();
    const outcome = await runGuarded({
      what: 'query',
      timeoutMs,
      log: this.log.child({ connector: name, kind: r.kind }),
      secrets,
      settings: r.settings,
      call: (ctx) => (fn as (c: unknown, q: unknown) => unknown).call(r.type!.plugin, ctx, clone(request)),
    });
    const took = Math.round(performance.now() - started);
    let report: QueryReport;
    if (!outcome.done) report = { ok: false, problem: clipProblem(outcome.problem), data: null, took_ms: took, timeout_s: timeoutMs / 1000 };
    else {
      const v = outcome.value as { ok?: unknown; problem?: unknown; data?: unknown } | null;
      if (typeof v !== 'object' || v === null || typeof v.ok !== 'boolean') report = { ok: false, problem: 'the query answered something that is not {ok, problem, data}', data: null, took_ms: took, timeout_s: timeoutMs / 1000 };
      else {
        let data = scrubJson(jsonOnly(v.data), secrets);
        let problem = v.ok ? null : clipProblem(scrubText(typeof v.problem === 'string' && v.problem !== '' ? v.problem : 'the query failed without a reason', secrets));
        if (JSON.stringify(data ?? null).length > MAX_DATA_BYTES) {
          data = null;
          problem = `the answer is larger than ${MAX_DATA_BYTES / 1024} KiB; narrow the query`;
        }
        report = { ok: v.ok && problem === null, problem, data: data ?? null, took_ms: took, timeout_s: timeoutMs / 1000 };
      }
    }
    await this.ledger.append({
      type: 'connector.queried',
      actor: who.actor,
      reason: report.ok ? `query on connector ${name}` : `query on connector ${name} failed: ${report.problem}`,
      data: { name, kind: r.kind, query: clip(scrubText(request.query, secrets), 2000), ok: report.ok, problem: report.problem },
    });
    return report;
  }

  /** Adds or updates a console connector; answers whether it was created. */
  async put(name: string, input: ConnectorInput, who: Principal): Promise<{ created: boolean; connector: ConnectorView }> {
    if (!NAME_PATTERN.test(name)) throw new AppError('invalid_connector_name', 'a connector name is lower case: a letter or digit, then up to 62 letters, digits and hyphens');
    if (RESERVED_NAMES.has(name)) throw new AppError('invalid_connector_name', `"${name}" is reserved by the API (/v1/connectors/${name})`);
    if (this.isFileManaged(name)) throw new AppError('connector_file_managed', `connector ${name} is defined in connectors.json in SERVICE_CONFIG_DIR; change it there`);
    const type = this.kinds.require(input.kind);
    const stored = await this.repo.get(name);
    const before = stored !== null && stored.kind === input.kind ? this.#fromRow(stored) : null;
    if (before !== null && before.fault !== null && before.settings === null) {
      // Stored secrets that cannot be opened (the secret key changed) are not kept.
      this.log.warn({ connector: name }, 'stored secrets of the connector cannot be opened; they must be given again');
    }
    const settings = this.#merge(type, input.settings, before?.settings ?? null);
    // The same settings again (a GET answer sent back): nothing is saved, the last check stands.
    if (before !== null && before.fault === null && before.settings !== null && isDeepStrictEqual(settings, before.settings)) {
      return { created: false, connector: await this.get(name) };
    }
    const { plain, secrets } = splitSecrets(settings, type.pointers);
    const sealed: Record<string, string> = {};
    for (const [p, v] of secrets) sealed[p] = this.cipher.encrypt(JSON.stringify(v));
    const at = this.clock.now().toISOString();
    // Saved right after a test of exactly these settings: that test is its first check.
    const tested = this.#recall(input.kind, settings);
    const row: ConnectorRow = { name, kind: input.kind, settings: plain, secrets: sealed, created_at: stored?.created_at ?? at, updated_at: at, updated_by: who.actor };
    await this.ledger.transact(async (trx, record) => {
      await this.repo.upsert(trx, row);
      if (tested === null) await this.repo.clearStatus(trx, name);
      else await this.repo.putStatus(this.#status(name, tested, input.kind), trx);
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
    if (this.isFileManaged(name)) throw new AppError('connector_file_managed', `connector ${name} is defined in connectors.json in SERVICE_CONFIG_DIR; remove it there`);
    const stored = NAME_PATTERN.test(name) ? await this.repo.get(name) : null;
    if (stored === null) throw new AppError('not_found', 'no such connector');
    await this.ledger.transact(async (trx, record) => {
      await this.repo.remove(trx, name);
      await record({ type: 'config.connector_removed', actor: who.actor, reason: `connector removed: ${name} (${stored.kind})`, data: { name, kind: stored.kind } });
    });
    this.log.info({ connector: name, kind: stored.kind }, 'connector removed');
    return { name, removed: true };
  }

  // ---- internals

  /**
   * Settings of an update merged with the saved ones: non-secret fields as given; a secret
   * omitted, blank or given as its mask keeps the saved value; null clears it. Validated
   * against the kind's schema (400 `invalid_settings` naming the field).
   */
  #merge(type: ConnectorKind, given: Record<string, unknown>, saved: Record<string, unknown> | null): Record<string, unknown> {
    const out = clone(given);
    for (const p of type.pointers) {
      const input = secretInput(getAt(given, p));
      if ('value' in input) continue;
      setAt(out, p, 'keep' in input && saved !== null ? getAt(saved, p) : undefined);
    }
    const problem = type.validate(out);
    if (problem !== null) throw new AppError('invalid_settings', problem);
    return out;
  }

  async #runTest(name: string | null, type: ConnectorKind, settings: Record<string, unknown>): Promise<TestReport> {
    const timeoutMs = cutOffMs(settings);
    const secrets = this.#secretValues(type, settings);
    const started = performance.now();
    const outcome = await runGuarded({
      what: 'test',
      timeoutMs,
      log: this.log.child({ connector: name, kind: type.name }),
      secrets,
      settings: clone(settings),
      call: (ctx) => type.plugin.test(ctx),
    });
    const took = Math.round(performance.now() - started);
    const base = { kind: type.name, version: type.version, took_ms: took, timeout_s: timeoutMs / 1000, checked_at: this.clock.now().toISOString() };
    if (!outcome.done) return { ok: false, problem: clipProblem(outcome.problem), found: null, ...base };
    const v = outcome.value as { ok?: unknown; problem?: unknown; found?: unknown } | null;
    if (typeof v !== 'object' || v === null || typeof v.ok !== 'boolean') return { ok: false, problem: 'the test answered something that is not {ok, problem}', found: null, ...base };
    let found = isObj(v.found) ? (scrubJson(jsonOnly(v.found), secrets) as Record<string, unknown>) : null;
    if (found !== null && JSON.stringify(found).length > MAX_FOUND_BYTES) found = { truncated: true };
    const problem = v.ok ? null : clipProblem(scrubText(typeof v.problem === 'string' && v.problem !== '' ? v.problem : 'the test failed without a reason', secrets));
    return { ok: v.ok, problem, found, ...base };
  }

  #testKey(kind: string, settings: Record<string, unknown>): string {
    return createHash('sha256').update(canonicalize({ kind, settings }) ?? '').digest('hex');
  }

  #remember(kind: string, settings: Record<string, unknown>, report: TestReport): void {
    const key = this.#testKey(kind, settings);
    this.#tested.delete(key);
    this.#tested.set(key, report);
    while (this.#tested.size > TESTS_REMEMBERED) this.#tested.delete(this.#tested.keys().next().value!);
  }

  /** The test of exactly these settings in the last TEST_REMEMBERED_MS, or null. */
  #recall(kind: string, settings: Record<string, unknown>): TestReport | null {
    const report = this.#tested.get(this.#testKey(kind, settings));
    if (report === undefined) return null;
    const age = this.clock.now().getTime() - Date.parse(report.checked_at);
    return age >= 0 && age <= TEST_REMEMBERED_MS ? report : null;
  }

  #status(name: string, report: TestReport, kind = report.kind): ConnectorStatus {
    return { name, kind, ok: report.ok, last_problem: report.problem, last_checked_at: report.checked_at, found: report.found };
  }

  #secretValues(type: ConnectorKind, settings: Record<string, unknown>): string[] {
    return secretStrings(type.pointers.map((p) => getAt(settings, p)));
  }

  async #resolve(name: string): Promise<Resolved> {
    const fromFile = this.#fromFile(name);
    if (fromFile !== null) return fromFile;
    const row = NAME_PATTERN.test(name) ? await this.repo.get(name) : null;
    if (row === null) throw new AppError('not_found', 'no such connector');
    return this.#fromRow(row);
  }

  #fromRow(row: ConnectorRow): Resolved {
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

  #fromFile(name: string): Resolved | null {
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

  #view(r: Resolved, status: ConnectorStatus | null): ConnectorView {
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

  // ---- discovery (used by host/discovery)

  /**
   * The configured connectors whose kind can `discover`, by name, with the fault that stops one
   * being used (null when it can be asked).
   */
  async discoverable(): Promise<Array<{ name: string; kind: string; fault: string | null }>> {
    const rows = await this.repo.list();
    const all = [...this.file.connectors.map((c) => this.#fromFile(c.name)!), ...rows.filter((r) => !this.isFileManaged(r.name)).map((r) => this.#fromRow(r))];
    all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return all
      .filter((r) => r.type !== null && typeof r.type.plugin.discover === 'function')
      .map((r) => ({ name: r.name, kind: r.kind, fault: r.fault ?? (r.settings === null ? 'its settings are incomplete' : null) }));
  }

  /**
   * Asks one configured connector what services it knows of, cut off at `timeoutMs` (the
   * discovery limit, not the 15 s of tests). Never throws for the plugin's sake: a throw, a bad
   * answer or the cut-off is the problem, scrubbed of the connector's secrets; names that are
   * not service names are dropped (counted in `dropped`).
   */
  async discover(name: string, timeoutMs: number): Promise<{ ok: boolean; problem: string | null; cut_off: boolean; services: DiscoveredService[]; dropped: number; took_ms: number }> {
    const started = performance.now();
    const took = () => Math.round(performance.now() - started);
    const r = await this.#resolve(name);
    const fn = r.type?.plugin.discover;
    if (r.fault !== null || r.type === null || r.settings === null || typeof fn !== 'function') {
      return { ok: false, problem: clipProblem(r.fault ?? (typeof fn !== 'function' ? `connectors of kind ${r.kind} cannot discover` : 'its settings are incomplete')), cut_off: false, services: [], dropped: 0, took_ms: took() };
    }
    const secrets = this.#secretValues(r.type, r.settings);
    const outcome = await runGuarded({
      what: 'discovery',
      timeoutMs,
      log: this.log.child({ connector: name, kind: r.kind }),
      secrets,
      settings: clone(r.settings),
      call: (ctx) => (fn as (c: unknown) => unknown).call(r.type!.plugin, ctx),
    });
    if (!outcome.done) return { ok: false, problem: clipProblem(outcome.problem), cut_off: /\(cut off\)$/.test(outcome.problem), services: [], dropped: 0, took_ms: took() };
    const v = outcome.value as { services?: unknown } | null;
    if (typeof v !== 'object' || v === null || !Array.isArray(v.services)) return { ok: false, problem: 'the discovery answered something that is not {services: [...]}', cut_off: false, services: [], dropped: 0, took_ms: took() };
    const services: DiscoveredService[] = [];
    let dropped = 0;
    for (const item of v.services as unknown[]) {
      const e = item as { name?: unknown; source?: unknown; evidence?: unknown } | null;
      if (typeof e !== 'object' || e === null || typeof e.name !== 'string' || !SERVICE_NAME.test(e.name.trim()) || services.length >= MAX_DISCOVERED) {
        dropped++;
        continue;
      }
      let evidence = isObj(e.evidence) ? (scrubJson(jsonOnly(e.evidence), secrets) as Record<string, unknown>) : {};
      if (JSON.stringify(evidence).length > MAX_EVIDENCE_BYTES) evidence = { truncated: true };
      const source = typeof e.source === 'string' && e.source.trim() !== '' ? clip(scrubText(e.source.trim(), secrets), 64) : 'unknown';
      services.push({ name: e.name.trim(), source, evidence });
    }
    return { ok: true, problem: null, cut_off: false, services, dropped, took_ms: took() };
  }

  // ---- polling (used by host/schedule/poller.ts)

  /**
   * The configured connectors whose kind can `pollAlerts` and that can be used now (no
   * configuration fault), with their `poll_s` setting when they have one.
   */
  async pollable(): Promise<Array<{ name: string; kind: string; poll_s: number | null }>> {
    const rows = await this.repo.list();
    const all = [...this.file.connectors.map((c) => this.#fromFile(c.name)!), ...rows.filter((r) => !this.isFileManaged(r.name)).map((r) => this.#fromRow(r))];
    all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return all
      .filter((r) => r.fault === null && r.settings !== null && r.type !== null && typeof r.type.plugin.pollAlerts === 'function')
      .map((r) => ({ name: r.name, kind: r.kind, poll_s: typeof r.settings!.poll_s === 'number' ? r.settings!.poll_s : null }));
  }

  /**
   * Polls one connector for its alerts (cut off as every call) and hands them to `take` (the
   * intake). A throw, a bad answer, the cut-off or `take` refusing the alerts is a failed poll:
   * nothing is taken, the problem becomes the connector's last problem, and the ledger records
   * `connector.poll_failed` when the problem is new (not every minute while it lasts). A poll that
   * works after a failure clears it (`connector.poll_recovered`); a first good poll marks the
   * connector ok.
   */
  async poll<T>(name: string, take: (kind: string, alerts: unknown[]) => Promise<T>): Promise<{ ok: true; kind: string; alerts: number; taken: T; took_ms: number } | { ok: false; kind: string; problem: string; took_ms: number }> {
    const started = performance.now();
    const took = () => Math.round(performance.now() - started);
    const r = await this.#resolve(name);
    const fn = r.type?.plugin.pollAlerts;
    let problem: string | null = null;
    let alerts: unknown[] = [];
    if (r.fault !== null || r.type === null || r.settings === null || typeof fn !== 'function') {
      problem = r.fault ?? (typeof fn !== 'function' ? `connectors of kind ${r.kind} cannot be polled` : 'its settings are incomplete');
    } else {
      const secrets = this.#secretValues(r.type, r.settings);
      const outcome = await runGuarded({
        what: 'poll',
        timeoutMs: cutOffMs(r.settings),
        log: this.log.child({ connector: name, kind: r.kind }),
        secrets,
        settings: clone(r.settings),
        call: (ctx) => (fn as (c: unknown) => unknown).call(r.type!.plugin, ctx),
      });
      if (!outcome.done) problem = outcome.problem;
      else if (!Array.isArray(outcome.value)) problem = 'the poll answered something that is not a list of alerts';
      else alerts = scrubJson(jsonOnly(outcome.value), secrets) as unknown[];
    }
    let taken: T | undefined;
    if (problem === null) {
      try {
        taken = await take(r.kind, alerts);
      } catch (e) {
        problem = `the polled alerts were refused: ${e instanceof Error ? e.message : String(e)}`;
      }
    }
    const before = await this.repo.status(name);
    const at = this.clock.now().toISOString();
    if (problem !== null) {
      problem = clipProblem(problem.startsWith('the poll') ? problem : `the poll failed: ${problem}`);
      const status: ConnectorStatus = { name, kind: r.kind, ok: false, last_problem: problem, last_checked_at: at, found: before?.kind === r.kind ? before.found : null };
      const isNew = before === null || before.ok || before.last_problem !== problem;
      this.log.warn({ connector: name, kind: r.kind }, problem);
      if (!isNew) await this.repo.putStatus(status);
      else {
        await this.ledger.transact(async (trx, record) => {
          await this.repo.putStatus(status, trx);
          await record({ type: 'connector.poll_failed', actor: 'system', reason: `polling connector ${name} failed: ${problem}`, data: { name, kind: r.kind, problem } });
        });
      }
      return { ok: false, kind: r.kind, problem, took_ms: took() };
    }
    if (before === null || !before.ok || before.kind !== r.kind) {
      const status: ConnectorStatus = { name, kind: r.kind, ok: true, last_problem: null, last_checked_at: at, found: before?.kind === r.kind ? before.found : null };
      if (before === null || before.kind !== r.kind || before.last_problem === null || !before.last_problem.startsWith('the poll')) await this.repo.putStatus(status);
      else {
        await this.ledger.transact(async (trx, record) => {
          await this.repo.putStatus(status, trx);
          await record({ type: 'connector.poll_recovered', actor: 'system', reason: `polling connector ${name} works again`, data: { name, kind: r.kind } });
        });
      }
    }
    return { ok: true, kind: r.kind, alerts: alerts.length, taken: taken as T, took_ms: took() };
  }

  // ---- notification (used by host/notify)

  /** Every configured connector whose kind can `notify`, with the fault that stops one being used (null when it can). */
  async notifiable(): Promise<Array<{ name: string; kind: string; fault: string | null }>> {
    const rows = await this.repo.list();
    const all = [...this.file.connectors.map((c) => this.#fromFile(c.name)!), ...rows.filter((r) => !this.isFileManaged(r.name)).map((r) => this.#fromRow(r))];
    all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return all
      .filter((r) => r.type !== null && typeof r.type.plugin.notify === 'function')
      .map((r) => ({ name: r.name, kind: r.kind, fault: r.fault ?? (r.settings === null ? 'its settings are incomplete' : null) }));
  }

  /** Whether connectors of `kind` can be notification targets. */
  canNotify(kind: string): boolean {
    return typeof this.kinds.get(kind)?.plugin.notify === 'function';
  }

  /**
   * Delivers one notification through a configured connector, cut off as every call. Never
   * throws for the plugin's sake: a throw, a bad answer, the cut-off or a connector that is gone
   * or cannot notify is the problem, scrubbed of the connector's secrets.
   */
  async notify(name: string, message: NotifyMessage): Promise<{ ok: boolean; problem: string | null; kind: string | null }> {
    const r = await this.#resolve(name).catch(() => null);
    if (r === null) return { ok: false, problem: `no connector named ${name} is configured`, kind: null };
    const fn = r.type?.plugin.notify;
    if (r.fault !== null || r.type === null || r.settings === null || typeof fn !== 'function') {
      return { ok: false, problem: clipProblem(r.fault ?? (typeof fn !== 'function' ? `connectors of kind ${r.kind} cannot notify` : 'its settings are incomplete')), kind: r.kind };
    }
    const secrets = this.#secretValues(r.type, r.settings);
    const outcome = await runGuarded({
      what: 'notification',
      timeoutMs: cutOffMs(r.settings),
      log: this.log.child({ connector: name, kind: r.kind }),
      secrets,
      settings: clone(r.settings),
      call: (ctx) => (fn as (c: unknown, m: unknown) => unknown).call(r.type!.plugin, ctx, clone(message)),
    });
    if (!outcome.done) return { ok: false, problem: clipProblem(outcome.problem), kind: r.kind };
    const v = outcome.value as { ok?: unknown; problem?: unknown } | null;
    if (typeof v !== 'object' || v === null || typeof v.ok !== 'boolean') return { ok: false, problem: 'the notification answered something that is not {ok, problem}', kind: r.kind };
    if (v.ok) return { ok: true, problem: null, kind: r.kind };
    return { ok: false, problem: clipProblem(scrubText(typeof v.problem === 'string' && v.problem !== '' ? v.problem : 'the notification failed without a reason', secrets)), kind: r.kind };
  }
}

/** What a discovered service name may look like. */
const SERVICE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
const MAX_DISCOVERED = 5000;
const MAX_EVIDENCE_BYTES = 4 * 1024;

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function clipProblem(text: string): string {
  return clip(text, MAX_PROBLEM, '…');
}

/** Plain JSON of a plugin's value (functions, cycles and the like dropped); null when it is not serialisable. */
function jsonOnly(v: unknown): unknown {
  if (v === undefined) return null;
  try {
    return JSON.parse(JSON.stringify(v)) as unknown;
  } catch {
    return null;
  }
}
