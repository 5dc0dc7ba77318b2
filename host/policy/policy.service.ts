/**
 * The action policy: what a policy document may say and how the rest of the host reads it
 * (parsePolicy, freezeAt, needsApproval, safeForL2, ceilingOf, policyDiff), and the service that
 * keeps the one in force (from the console or policy.json) and changes it.
 *
 * Over 300 lines and, for now, one concept: every rule here answers a question about the same
 * document, and the service's checks on a change are those rules applied to it. The rules are
 * pure functions with no state, so they are the seam if the file grows further
 * (a `policy.rules.ts` beside this one, imported by the action gate and autonomy); they stay here
 * while the composition root and the validator this file uses are being reworked (issue 12).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Principal } from '../identity/principal.ts';
import { ajv, describe } from '../json-schema.ts';
import type { Ledger, RecordEvent } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import { checkVersion, takeBack } from '../settings/revisions.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import type { Trx } from '../storage/db.ts';
import { defaultPolicy, POLICY_SCHEMA, type CeilingLevel, type DefaultAutonomy, type FreezeWindow, type PolicyDocument } from './policy.schema.ts';
import { clip } from '../text.ts';

/** The settings row the policy lives in. */
export const POLICY_SETTING = 'policy';
/** The file in SERVICE_CONFIG_DIR that makes the policy file-managed. */
export const POLICY_FILE = 'policy.json';

export type PolicySource = 'default' | 'console' | 'file';

/** What the autonomy area reads (it is built in parallel and depends only on this). */
export interface PolicyReader {
  current(): Promise<{ default_autonomy: DefaultAutonomy; ceilings: Record<string, CeilingLevel> }>;
}

/** The policy in force, as GET /v1/policy answers it. */
export interface PolicyInForce extends PolicyDocument {
  /** 0 before the first change; up by one on each change. */
  version: number;
  source: PolicySource;
  updated_at: string | null;
  updated_by: string | null;
  /** Only for a file-managed policy whose file could not be used: why (the default is in force). */
  problem?: string;
}

/** The stored row. `set_by` says where the stored policy came from. */
interface StoredPolicy {
  version: number;
  policy: PolicyDocument;
  set_by: 'console' | 'file';
  updated_at: string;
  updated_by: string;
}

export interface PolicyDeps {
  settings: SettingsStore;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  configDir: string | null;
}

const check = ajv.compile(POLICY_SCHEMA) as ValidateFunction<PolicyDocument & { version?: number }>;

/** Thrown for a document that is not a valid policy; `message` names the first bad field. */
export class PolicyInvalid extends AppError {
  constructor(message: string) {
    super('invalid_body', message);
  }
}

function explain(errors: ErrorObject[]): string {
  const e = errors[0];
  if (e !== undefined && e.keyword === 'enum') {
    const where = e.instancePath === '' ? 'body' : e.instancePath.slice(1).replaceAll('/', '.');
    return `${where} must be one of: ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
  }
  // A bad key inside `ceilings`: ajv names it on the error itself (`propertyName`).
  const name = e?.propertyName ?? (e?.params as { propertyName?: string } | undefined)?.propertyName;
  if (e !== undefined && name !== undefined) {
    const where = e.instancePath === '' ? 'body' : e.instancePath.slice(1).replaceAll('/', '.');
    return `${where}: ${JSON.stringify(name)} is not a valid service name`;
  }
  return describe(errors);
}

function utcMs(text: string): number {
  const ms = Date.parse(text);
  // Date.parse rolls 2026-02-30 over to March: a real timestamp prints back as the same day and time.
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 16) !== text.slice(0, 16)) return Number.NaN;
  return ms;
}

/**
 * Checks a policy document (the schema, then the rules a schema cannot say) and answers it
 * without `version`. Throws 400 `invalid_body` naming the first bad field.
 */
export function parsePolicy(input: unknown): PolicyDocument {
  if (!check(input)) throw new PolicyInvalid(explain(check.errors ?? []));
  input.freeze_windows.forEach((w, i) => {
    const start = utcMs(w.start);
    const end = utcMs(w.end);
    if (Number.isNaN(start)) throw new PolicyInvalid(`freeze_windows.${i}.start is not a real time`);
    if (Number.isNaN(end)) throw new PolicyInvalid(`freeze_windows.${i}.end is not a real time`);
    if (start >= end) throw new PolicyInvalid(`freeze_windows.${i}.end must be after its start`);
  });
  const safe = new Set(input.safe_for_l2);
  const both = input.always_approve.findIndex((k) => safe.has(k));
  if (both >= 0)
    throw new PolicyInvalid(`always_approve.${both}: ${input.always_approve[both]} is also in safe_for_l2; a kind is either safe for L2 or always approved`);
  return {
    default_autonomy: input.default_autonomy,
    ceilings: { ...input.ceilings },
    safe_for_l2: [...input.safe_for_l2],
    always_approve: [...input.always_approve],
    freeze_windows: input.freeze_windows.map((w) => ({ name: w.name, start: w.start, end: w.end })),
    max_actions_per_service_per_hour: input.max_actions_per_service_per_hour,
  };
}

/** The freeze window `at` falls in (start inclusive, end exclusive), or null. */
export function freezeAt(policy: Pick<PolicyDocument, 'freeze_windows'>, at: Date): FreezeWindow | null {
  const t = at.getTime();
  return policy.freeze_windows.find((w) => Date.parse(w.start) <= t && t < Date.parse(w.end)) ?? null;
}

export function inFreeze(policy: Pick<PolicyDocument, 'freeze_windows'>, at: Date): boolean {
  return freezeAt(policy, at) !== null;
}

/** Whether the kind is on the always-approve list (approval at any level). */
export function needsApproval(policy: Pick<PolicyDocument, 'always_approve'>, kind: string): boolean {
  return policy.always_approve.includes(kind);
}

/** Whether the kind may run at L2 without asking; always_approve wins, should both ever list it. */
export function safeForL2(policy: Pick<PolicyDocument, 'safe_for_l2' | 'always_approve'>, kind: string): boolean {
  return policy.safe_for_l2.includes(kind) && !policy.always_approve.includes(kind);
}

/** The ceiling of a service: its own entry, else L2 (no ceiling beyond the level itself). */
export function ceilingOf(policy: Pick<PolicyDocument, 'ceilings'>, service: string): CeilingLevel {
  return Object.hasOwn(policy.ceilings, service) ? policy.ceilings[service]! : 'L2';
}

const levelIn = (p: PolicyDocument, service: string): CeilingLevel | null => (Object.hasOwn(p.ceilings, service) ? p.ceilings[service]! : null);
const sameSet = (a: string[], b: string[]) => a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');

/**
 * What changed, field by field, as `{field: {from, to}}`; ceilings as a list of
 * `{service, from, to}` (null = no entry), so service names never become keys in the ledger.
 * Empty when nothing changed (the order of a kind list does not count).
 */
export function policyDiff(before: PolicyDocument, after: PolicyDocument): Record<string, unknown> {
  const diff: Record<string, unknown> = {};
  if (before.default_autonomy !== after.default_autonomy) diff.default_autonomy = { from: before.default_autonomy, to: after.default_autonomy };
  const services = [...new Set([...Object.keys(before.ceilings), ...Object.keys(after.ceilings)])].sort();
  const ceilings = services.map((service) => ({ service, from: levelIn(before, service), to: levelIn(after, service) })).filter((c) => c.from !== c.to);
  if (ceilings.length > 0) diff.ceilings = ceilings;
  if (!sameSet(before.safe_for_l2, after.safe_for_l2)) diff.safe_for_l2 = { from: before.safe_for_l2, to: after.safe_for_l2 };
  if (!sameSet(before.always_approve, after.always_approve)) diff.always_approve = { from: before.always_approve, to: after.always_approve };
  if (JSON.stringify(before.freeze_windows) !== JSON.stringify(after.freeze_windows))
    diff.freeze_windows = { from: before.freeze_windows, to: after.freeze_windows };
  if (before.max_actions_per_service_per_hour !== after.max_actions_per_service_per_hour) {
    diff.max_actions_per_service_per_hour = { from: before.max_actions_per_service_per_hour, to: after.max_actions_per_service_per_hour };
  }
  return diff;
}

/**
 * The policy in force. Console-managed: the settings row `policy`, replaced by `put` (each
 * change a new version and a `config.policy_changed` event with the diff). File-managed
 * (policy.json in SERVICE_CONFIG_DIR): read and checked once at construction; `put` answers
 * 409 `policy_file_managed`; a file that cannot be used leaves the default policy in force and
 * is reported as `problem`, never stopping the start. `start()` brings the stored row (and so
 * the version and the audit log) in line with the file.
 */
export class PolicyService implements PolicyReader {
  readonly fileManaged: boolean;
  /** The path of policy.json, when SERVICE_CONFIG_DIR is set. */
  readonly file: string | null;
  /** The file's policy, or the default with the reason the file could not be used. */
  readonly #fromFile: { policy: PolicyDocument; problem: string | null } | null = null;

  readonly #settings: SettingsStore;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  readonly #log: Logger;

  constructor(deps: PolicyDeps) {
    this.#settings = deps.settings;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
    this.#log = deps.log;
    this.file = deps.configDir === null ? null : path.join(deps.configDir, POLICY_FILE);
    let text: string | null = null;
    let problem: string | null = null;
    if (this.file !== null) {
      try {
        text = readFileSync(this.file, 'utf8');
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT') problem = `${POLICY_FILE} could not be read (${code ?? 'error'})`;
      }
    }
    this.fileManaged = text !== null || problem !== null;
    if (text !== null) {
      try {
        const raw = JSON.parse(text) as unknown;
        // A version in the file means nothing: the install counts its own.
        if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) delete (raw as { version?: unknown }).version;
        this.#fromFile = { policy: parsePolicy(raw), problem: null };
      } catch (e) {
        problem = e instanceof SyntaxError ? `${POLICY_FILE} is not valid JSON: ${e.message}` : `${POLICY_FILE} is not a valid policy: ${(e as Error).message}`;
      }
    }
    if (problem !== null) this.#fromFile = { policy: defaultPolicy(), problem };
    if (problem !== null) this.#log.warn({ component: 'policy', file: this.file }, `${problem}; the default policy is in force`);
  }

  /** Why policy.json could not be used, or null. */
  get problem(): string | null {
    return this.#fromFile?.problem ?? null;
  }

  /**
   * At start, for a file-managed policy: when the file's policy (or the default, for a file
   * that cannot be used) differs from the stored one, stores it as a new version, recorded as
   * `config.policy_changed` by `system`; a file that cannot be used is also recorded as
   * `system.policy_file_invalid`. Never throws: a failure is logged and GET still answers.
   */
  async start(): Promise<void> {
    const f = this.#fromFile;
    if (f === null) return;
    try {
      await this.#ledger.transact(
        async (trx, record) => {
          const row = await this.#settings.get<StoredPolicy>(POLICY_SETTING, trx);
          const before = row?.policy ?? defaultPolicy();
          const diff = policyDiff(before, f.policy);
          if (f.problem !== null) {
            await record({ type: 'system.policy_file_invalid', actor: 'system', reason: clip(f.problem, 4000), data: { file: POLICY_FILE } });
          }
          if (row !== null && row.set_by === 'file' && Object.keys(diff).length === 0) return;
          await this.#write(
            trx,
            record,
            row,
            f.policy,
            'file',
            'system',
            diff,
            f.problem === null ? `${POLICY_FILE} loaded` : `${POLICY_FILE} unusable: default policy in force`,
          );
        },
        { headFirst: true },
      );
    } catch (err) {
      this.#log.error({ err, component: 'policy' }, 'could not record the policy from policy.json');
    }
  }

  /** The policy in force with its version and source. */
  async get(trx?: Trx): Promise<PolicyInForce> {
    const row = await this.#settings.get<StoredPolicy>(POLICY_SETTING, trx);
    const f = this.#fromFile;
    if (f !== null) {
      const synced = row !== null && row.set_by === 'file';
      const answer: PolicyInForce = {
        ...structuredClone(f.policy),
        version: row?.version ?? 0,
        source: 'file',
        updated_at: synced ? row.updated_at : null,
        updated_by: synced ? row.updated_by : null,
      };
      if (f.problem !== null) answer.problem = f.problem;
      return answer;
    }
    if (row === null) return { ...defaultPolicy(), version: 0, source: 'default', updated_at: null, updated_by: null };
    return { ...row.policy, version: row.version, source: 'console', updated_at: row.updated_at, updated_by: row.updated_by };
  }

  /** PolicyReader: the policy in force (a superset of what the autonomy area reads). */
  async current(trx?: Trx): Promise<PolicyInForce> {
    return this.get(trx);
  }

  /**
   * Replaces the policy. 409 `policy_file_managed` when policy.json manages it; 400
   * `invalid_body` naming the field; 409 `policy_version_conflict` when `expectedVersion` (the
   * body's `version` or If-Match) is not the version in force. A body equal to the policy in
   * force changes nothing (same version, no event). What GET answered is accepted back: its
   * read-only fields (`source`, `updated_at`, `updated_by`, `problem`) are ignored.
   */
  async put(input: unknown, principal: Pick<Principal, 'actor'>, expectedVersion: number | null = null): Promise<PolicyInForce> {
    if (this.fileManaged) throw new AppError('policy_file_managed', `the policy is managed by ${POLICY_FILE} in SERVICE_CONFIG_DIR`);
    const { doc, version: bodyVersion } = takeBack(input, ['problem']);
    const next = parsePolicy(doc);
    if (bodyVersion !== null && expectedVersion !== null && bodyVersion !== expectedVersion) {
      throw new AppError('invalid_body', 'version and If-Match name different versions');
    }
    const expected = bodyVersion ?? expectedVersion;
    // The chain head first: every policy change queues there, so two PUTs never read the same version.
    return this.#ledger.transact(
      async (trx, record) => {
        const row = await this.#settings.get<StoredPolicy>(POLICY_SETTING, trx);
        const version = row?.version ?? 0;
        // The policy's own name for version_conflict, kept because docs/api.md promised it first.
        checkVersion(expected, version, 'the policy', 'policy_version_conflict');
        const diff = policyDiff(row?.policy ?? defaultPolicy(), next);
        if (Object.keys(diff).length > 0) await this.#write(trx, record, row, next, 'console', principal.actor, diff, 'policy changed');
        return this.get(trx);
      },
      { headFirst: true },
    );
  }

  /** The policy in force as the keychain carries it (docs/keychain.md): the document, without its version. */
  async exportCarried(trx?: Trx): Promise<{ policy: PolicyDocument }> {
    const { version: _version, source: _source, updated_at: _at, updated_by: _by, problem: _problem, ...doc } = await this.get(trx);
    return { policy: parsePolicy(doc) };
  }

  /**
   * Makes the policy the carried one, in the keychain's transaction: a new version and a
   * `config.policy_changed` event by `actor` when it differs. 409 `policy_file_managed` when
   * policy.json manages it here; 400 when the document is not a valid policy.
   */
  async applyCarried(trx: Trx, record: RecordEvent, data: unknown, actor: string): Promise<Record<string, unknown>> {
    if (this.fileManaged) throw new AppError('policy_file_managed', `the policy is managed by ${POLICY_FILE} in SERVICE_CONFIG_DIR on this install`);
    const given = data !== null && typeof data === 'object' ? (data as { policy?: unknown }).policy : undefined;
    const next = parsePolicy(given);
    const row = await this.#settings.get<StoredPolicy>(POLICY_SETTING, trx);
    const diff = policyDiff(row?.policy ?? defaultPolicy(), next);
    if (Object.keys(diff).length === 0) return { changed: false };
    await this.#write(trx, record, row, next, 'console', actor, diff, 'policy carried by the keychain');
    return { changed: true, policy_version: (row?.version ?? 0) + 1 };
  }

  /** Whether an action at `at` (now by default) falls in a change freeze. */
  async inFreeze(at: Date = this.#clock.now()): Promise<boolean> {
    return inFreeze(await this.get(), at);
  }

  async freezeAt(at: Date = this.#clock.now()): Promise<FreezeWindow | null> {
    return freezeAt(await this.get(), at);
  }

  async needsApproval(kind: string): Promise<boolean> {
    return needsApproval(await this.get(), kind);
  }

  async safeForL2(kind: string): Promise<boolean> {
    return safeForL2(await this.get(), kind);
  }

  async #write(
    trx: Trx,
    record: RecordEvent,
    row: StoredPolicy | null,
    policy: PolicyDocument,
    setBy: StoredPolicy['set_by'],
    actor: string,
    diff: Record<string, unknown>,
    reason: string,
  ): Promise<void> {
    const version = (row?.version ?? 0) + 1;
    const at = this.#clock.now().toISOString();
    const stored: StoredPolicy = { version, policy, set_by: setBy, updated_at: at, updated_by: actor };
    await this.#settings.put(trx, POLICY_SETTING, stored, at);
    await record({ type: 'config.policy_changed', actor, reason, data: { version, source: setBy, diff } });
  }
}
