import type { Mode } from './mode.ts';
import type { PeopleCount } from '../identity/people.ts';
import type { Install } from '../install/install.ts';
import type { Ledger, RecordEvent } from '../ledger/ledger.service.ts';
import { isUsable } from '../licence/licence.ts';
import type { LicenceService } from '../licence/licence.service.ts';
import type { Trx } from '../storage/db.ts';

/**
 * The operating mode, always worked out from the database (so every host process agrees):
 * `setup` without a usable licence, `configuring` once licensed but before the first owner,
 * `operating` after that. The last mode seen is stored so that each change is recorded once
 * (`system.mode_changed`), even with several processes racing.
 */
export class ModeService {
  readonly #licences: LicenceService;
  readonly #people: PeopleCount;
  readonly #install: Pick<Install, 'get' | 'moveMode'>;
  readonly #ledger: Ledger;

  constructor(deps: { licences: LicenceService; people: PeopleCount; install: Pick<Install, 'get' | 'moveMode'>; ledger: Ledger }) {
    this.#licences = deps.licences;
    this.#people = deps.people;
    this.#install = deps.install;
    this.#ledger = deps.ledger;
    // A licence change may change the mode: recorded in the change's own transaction.
    deps.licences.onChanged((trx, record) => this.recordChange(trx, record));
  }

  #hasPeople = false;

  async current(trx?: Trx): Promise<Mode> {
    if (!isUsable(await this.#licences.status(trx))) return 'setup';
    // The last owner can never be removed, so once someone exists (committed: read outside a
    // transaction that could still roll back) that stays true.
    if (this.#hasPeople) return 'operating';
    const has = (await this.#people.count(trx)) > 0;
    if (has && trx === undefined) this.#hasPeople = true;
    return has ? 'operating' : 'configuring';
  }

  /** Inside a change's transaction: records a mode change that change caused. */
  async recordChange(trx: Trx, record: RecordEvent): Promise<void> {
    const stored = (await this.#install.get(trx))?.mode ?? 'setup';
    const now = await this.current(trx);
    if (now !== stored && (await this.#install.moveMode(trx, stored, now))) {
      await record({ type: 'system.mode_changed', actor: 'system', reason: `mode ${stored} → ${now}`, data: { from: stored, to: now } });
    }
  }

  /** Periodic: catches changes that time alone causes (a licence running out of grace). */
  async sync(): Promise<void> {
    const stored = (await this.#install.get())?.mode ?? 'setup';
    if ((await this.current()) === stored) return;
    await this.#ledger.transact((trx, record) => this.recordChange(trx, record));
  }
}
