import type { Clock } from '../clock.ts';
import type { Ledger, RecordEvent } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import type { Trx } from '../storage/db.ts';
import { clip } from '../text.ts';
import { AUTONOMY_FILE, readAutonomyFile, type AutonomyFileRead } from './autonomy.file.ts';
import type { AutonomyRepo, StoredLevel } from './autonomy.repo.ts';
import { isLevel, rank, type GovernedPolicy, type Level, type PolicyReader } from './levels.ts';

/** The settings document that says which autonomy.json is in force (shared by every host process). */
export const AUTONOMY_FILE_SETTING = 'autonomy_file';
/** The actor of every change autonomy.json makes. */
export const FILE_ACTOR = 'config-file';

/** Which file's levels are in force: its SHA-256 (null once no file grants anything) and when it was applied. */
interface InForceDoc {
  sha256: string | null;
  applied_at: string;
}

/** What this host process last read, and what is in force for the whole install. */
export interface AutonomyFileStatus {
  /**
   * `none`: no SERVICE_CONFIG_DIR; `absent`: no autonomy.json in it; `good`/`bad`: what the last
   * read found; `unread` before the first read.
   */
  state: 'none' | 'absent' | 'good' | 'bad' | 'unread';
  /** The SHA-256 of the file this process last read (null when none was read). */
  sha256: string | null;
  /** Why this process's file is not in force: not valid, above a ceiling, or could not be applied. Null when it is. */
  problem: string | null;
  read_at: string | null;
  /** The file whose levels are in force (null when no file ever granted one), and the services it manages. */
  in_force: { sha256: string | null; applied_at: string; services: Array<{ service: string; level: Level }> } | null;
}

/** A change the file makes to one service: taken over or changed (`to` a level), or released (`to` null). */
interface Step {
  service: string;
  stored: StoredLevel | null;
  to: Level | null;
}

/**
 * Keeps the levels `autonomy.json` grants in force. `sync()` runs at start and on every tick: it
 * reads the file and its SHA-256, and does nothing more while neither changed since this
 * process's last good sync. A valid file is applied whole in one transaction (chain head first,
 * so host processes reading the same file queue and the second finds nothing to do): each
 * service it lists is stored at its level with source `file`, each service it no longer lists
 * returns to the policy's default, each a `governance.autonomy_changed` by `config-file` with the
 * file's SHA-256. A missing file (or no SERVICE_CONFIG_DIR) grants nothing, so it releases every
 * service a file granted. A file that cannot be used (unreadable, not JSON, not valid, a level
 * above the policy's ceiling) changes nothing: the last good file stays in force, and the
 * problem is logged, recorded once as `system.autonomy_file_invalid` and shown by doctor.
 */
export class AutonomyFileService {
  readonly #file: string | null;
  readonly #repo: AutonomyRepo;
  readonly #settings: SettingsStore;
  readonly #policy: PolicyReader;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  readonly #log: Logger;
  /** The SHA-256 (or `absent`) of the file last brought into force by this process; null until then. */
  #settled: string | null = null;
  /** The problem last reported, so a bad file is reported once, not on every tick. */
  #reported: string | null = null;
  #status: Omit<AutonomyFileStatus, 'in_force'>;

  constructor(deps: {
    /** The path of autonomy.json, or null without SERVICE_CONFIG_DIR. */
    file: string | null;
    repo: AutonomyRepo;
    settings: SettingsStore;
    policy: PolicyReader;
    ledger: Ledger;
    clock: Clock;
    log: Logger;
  }) {
    this.#file = deps.file;
    this.#repo = deps.repo;
    this.#settings = deps.settings;
    this.#policy = deps.policy;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
    this.#log = deps.log;
    this.#status = { state: deps.file === null ? 'none' : 'unread', sha256: null, problem: null, read_at: null };
  }

  /** This process's last read, and the file in force for the install. */
  async status(): Promise<AutonomyFileStatus> {
    const [doc, rows] = await Promise.all([this.#settings.get<InForceDoc>(AUTONOMY_FILE_SETTING), this.#repo.fromFile()]);
    return {
      ...this.#status,
      in_force: doc === null ? null : { ...doc, services: rows.map((r) => ({ service: r.service, level: r.level })) },
    };
  }

  /** Reads the file and brings its levels into force when it changed. Never throws: a failure is logged and retried on the next call. */
  async sync(): Promise<void> {
    const read: AutonomyFileRead = this.#file === null ? { state: 'absent' } : readAutonomyFile(this.#file);
    const key = read.state === 'absent' ? 'absent' : read.sha256;
    this.#status = {
      state: this.#file === null ? 'none' : read.state,
      sha256: read.state === 'absent' ? null : read.sha256,
      problem: read.state === 'bad' ? read.problem : null,
      read_at: this.#clock.now().toISOString(),
    };
    if (read.state === 'bad') return this.#report(read.sha256, read.problem);
    if (key === this.#settled) return;
    const wanted = read.state === 'good' ? read.services : new Map<string, Level>();
    const sha = read.state === 'good' ? read.sha256 : null;
    try {
      const above = aboveCeiling(await this.#policy.current(), wanted);
      if (above !== null) return this.#report(sha, `${AUTONOMY_FILE} is not valid: ${above}`);
      // Most ticks of a settled install find nothing to write: no transaction, no chain-head lock.
      if ((await this.#plan(undefined, wanted, sha)) !== null) {
        await this.#ledger.transact((trx, record) => this.#apply(trx, record, wanted, sha), { headFirst: true });
      }
      this.#settled = key;
      this.#reported = null;
    } catch (err) {
      this.#status.problem = `${AUTONOMY_FILE} could not be applied: ${clip(err instanceof Error ? err.message : String(err), 300, '…')}`;
      this.#log.error({ err, component: 'autonomy', sha256: sha }, `could not apply ${AUTONOMY_FILE}; retried on the next tick`);
    }
  }

  /** Inside the transaction: the plan again (another process may have applied the same file), then each step and its event. */
  async #apply(trx: Trx, record: RecordEvent, wanted: ReadonlyMap<string, Level>, sha: string | null): Promise<void> {
    const policy = await this.#policy.current(trx);
    const above = aboveCeiling(policy, wanted);
    if (above !== null) throw new Error(above);
    const plan = await this.#plan(trx, wanted, sha);
    if (plan === null) return;
    const at = this.#clock.now().toISOString();
    for (const { service, stored, to } of plan.steps) {
      const from: Level = stored?.level ?? policy.default_autonomy;
      if (to === null) await this.#repo.remove(trx, service);
      else await this.#repo.set(trx, { service, level: to, changed_at: at, changed_by: FILE_ACTOR, source: 'file' });
      const level = to ?? policy.default_autonomy;
      await record({
        type: 'governance.autonomy_changed',
        actor: FILE_ACTOR,
        reason:
          to === null
            ? `${service} is no longer in ${AUTONOMY_FILE}: back to the policy's default ${level}`
            : stored?.source !== 'file' && from === to
              ? `${service} is now managed by ${AUTONOMY_FILE} at ${to}`
              : `${service} set from ${from} to ${to} by ${AUTONOMY_FILE}`,
        data: { service, from, to: level, sha256: sha, source: 'file', managed_by: to === null ? 'api' : 'file', request_id: null, by: FILE_ACTOR },
      });
    }
    if (plan.docChanged) await this.#settings.put(trx, AUTONOMY_FILE_SETTING, { sha256: sha, applied_at: at } satisfies InForceDoc, at);
  }

  /** What bringing `wanted` into force would change; null when nothing. Inside `trx` the rows are locked (MySQL). */
  async #plan(trx: Trx | undefined, wanted: ReadonlyMap<string, Level>, sha: string | null): Promise<{ steps: Step[]; docChanged: boolean } | null> {
    const doc = await this.#settings.get<InForceDoc>(AUTONOMY_FILE_SETTING, trx);
    const rows = await this.#repo.all(trx);
    const stored = new Map(rows.map((r) => [r.service, r]));
    const steps: Step[] = [];
    for (const [service, to] of wanted) {
      const row = stored.get(service) ?? null;
      if (row?.source !== 'file' || row.level !== to) steps.push({ service, stored: row, to });
    }
    for (const row of rows) if (row.source === 'file' && !wanted.has(row.service)) steps.push({ service: row.service, stored: row, to: null });
    // No file ever in force and none now: nothing to remember.
    const docChanged = doc === null ? sha !== null : doc.sha256 !== sha;
    return steps.length === 0 && !docChanged ? null : { steps, docChanged };
  }

  /** A file that cannot be used: logged and recorded once per distinct problem; the levels in force stay. */
  async #report(sha: string | null, problem: string): Promise<void> {
    this.#status.state = 'bad';
    this.#status.problem = problem;
    const key = `${sha ?? ''}\n${problem}`;
    if (this.#reported === key) return;
    this.#log.warn({ component: 'autonomy', sha256: sha }, `${problem}; the last good ${AUTONOMY_FILE} stays in force`);
    try {
      await this.#ledger.append({
        type: 'system.autonomy_file_invalid',
        actor: 'system',
        reason: clip(problem, 4000),
        data: { file: AUTONOMY_FILE, sha256: sha },
      });
      this.#reported = key;
    } catch (err) {
      this.#log.error({ err, component: 'autonomy' }, `could not record that ${AUTONOMY_FILE} is not valid`);
    }
    // A file that was good and is now bad must be applied again once it is good again, even if unchanged since.
    this.#settled = null;
  }
}

/** The first service the file raises above the policy's ceiling for it, in words; null when none. */
function aboveCeiling(policy: Pick<GovernedPolicy, 'ceilings'>, wanted: ReadonlyMap<string, Level>): string | null {
  for (const [service, level] of wanted) {
    const ceiling = Object.hasOwn(policy.ceilings, service) ? policy.ceilings[service] : undefined;
    if (ceiling !== undefined && isLevel(ceiling) && rank(level) > rank(ceiling)) {
      return `services.${service} is ${level}, above the policy's ceiling for ${service} (${ceiling})`;
    }
  }
  return null;
}
