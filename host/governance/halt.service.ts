import type { Clock } from '../clock.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Asker } from './asker.ts';
import type { HaltRepo, HaltState } from './halt.repo.ts';

export interface HaltOutcome {
  halted: boolean;
  halt: { by: string; reason: string; at: string } | null;
  /** false when the switch was already in the asked position (no event written). */
  changed: boolean;
}

export const haltView = (s: HaltState): HaltOutcome['halt'] => (s.halted ? { by: s.by ?? '', reason: s.reason ?? '', at: s.at ?? '' } : null);

/**
 * The halt switch: one row in the database, read on every check. Halting when halted and
 * resuming when running are idempotent: 200 with `changed: false` and no second event.
 */
export class HaltService {
  readonly #repo: HaltRepo;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  readonly #resumed: Array<() => void> = [];

  constructor(deps: { repo: HaltRepo; ledger: Ledger; clock: Clock }) {
    this.#repo = deps.repo;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
  }

  state(): Promise<HaltState> {
    return this.#repo.read();
  }

  async halt(asker: Asker, reason: string): Promise<HaltOutcome> {
    return this.#ledger.transact(
      async (trx, record) => {
        const now = await this.#repo.readIn(trx, 'update');
        if (now.halted) return { halted: true, halt: haltView(now), changed: false };
        const next: HaltState = { halted: true, by: asker.by, reason, at: this.#clock.now().toISOString() };
        await this.#repo.write(trx, next);
        await record({ type: 'governance.halted', actor: asker.actor, reason, data: { by: asker.by } });
        return { halted: true, halt: haltView(next), changed: true };
      },
      { headFirst: true },
    );
  }

  /** Called after a resume committed: acting proposes again what the halt held back (docs/acting.md). */
  onResumed(listener: () => void): void {
    this.#resumed.push(listener);
  }

  async resume(asker: Asker): Promise<HaltOutcome> {
    const outcome = await this.#ledger.transact(
      async (trx, record) => {
        const now = await this.#repo.readIn(trx, 'update');
        if (!now.halted) return { halted: false, halt: null, changed: false };
        await this.#repo.write(trx, { halted: false, by: null, reason: null, at: null });
        await record({
          type: 'governance.resumed',
          actor: asker.actor,
          reason: `halt released by ${asker.by}`,
          data: { by: asker.by, halted_by: now.by, halted_reason: now.reason, halted_at: now.at },
        });
        return { halted: false, halt: null, changed: true };
      },
      { headFirst: true },
    );
    if (outcome.changed) for (const l of this.#resumed) l();
    return outcome;
  }
}
