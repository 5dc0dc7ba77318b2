import { MINUTE, type Clock } from '../clock.ts';
import type { ChainHead } from '../ledger/entry.ts';
import type { VerifyReport } from '../ledger/verify.ts';
import type { LedgerStandingView } from './digest.ts';

/** How long a verification is reused while the chain grows. */
export const LEDGER_REUSE_MS = 10 * MINUTE;

/**
 * Whether the ledger verifies, as the digest prints it, without a full re-verify per request.
 * A full verify (the same as GET /v1/ledger/verify) is run at most once at a time (concurrent
 * requests wait for the same one) and reused while the head has not moved, or for up to
 * 10 minutes when it has; the digest then shows the head that was verified and when, never
 * the newer head as if it had been checked. The daily e-mail asks for a fresh one.
 */
export class LedgerStanding {
  readonly #verify: () => Promise<VerifyReport>;
  readonly #head: () => Promise<ChainHead>;
  readonly #clock: Clock;
  #last: { view: LedgerStandingView; atMs: number } | null = null;
  #running: Promise<LedgerStandingView> | null = null;

  constructor(deps: { verify: () => Promise<VerifyReport>; head: () => Promise<ChainHead>; clock: Clock }) {
    this.#verify = deps.verify;
    this.#head = deps.head;
    this.#clock = deps.clock;
  }

  async standing(opts: { fresh?: boolean } = {}): Promise<LedgerStandingView> {
    const last = this.#last;
    if (!opts.fresh && last !== null) {
      if (this.#clock.now().getTime() - last.atMs < LEDGER_REUSE_MS) return last.view;
      if ((await this.#head()).seq === last.view.head.seq) return last.view;
    }
    this.#running ??= this.#run().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  async #run(): Promise<LedgerStandingView> {
    const at = this.#clock.now();
    const r = await this.#verify();
    const view: LedgerStandingView = {
      ok: r.ok,
      head: { seq: r.head.seq, hash: r.head.hash },
      verified_at: at.toISOString(),
      problem: r.ok ? null : `${r.problem ?? 'broken'}${r.first_bad_seq === null ? '' : ` at seq ${r.first_bad_seq}`}`,
    };
    this.#last = { view, atMs: at.getTime() };
    return view;
  }
}
