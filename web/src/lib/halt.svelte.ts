import { api, ApiError, type Halt } from './api.ts';
import { watchHead } from './live.ts';

/**
 * The halt switch as every part of the console shows it: one state, read from the API, shared by
 * the banner on every page (HaltSwitch) and the Home page's card, so the two never disagree. It
 * is read when a part that shows it appears and whenever the ledger head moves (every halt and
 * resume is a ledger event), and set at once from the answer of a halt or resume made here.
 *
 * Once operating it comes from GET /v1/autonomy; before that (which answers 503), from the
 * ledger's last halt or resume event (the switch writes one in the same transaction as every
 * change, and works in every mode).
 */
const state = $state({
  /** null: not read yet. */
  halted: null as boolean | null,
  halt: null as Halt | null,
  problem: null as string | null,
});

export async function readHalt(): Promise<void> {
  try {
    const a = await api.autonomy();
    setHalt(a.halted, a.halt);
  } catch (e) {
    if (e instanceof ApiError && e.code === 'not_operating') {
      try {
        const [h, r] = await Promise.all([api.ledger({ type: 'governance.halted', limit: 1 }), api.ledger({ type: 'governance.resumed', limit: 1 })]);
        const lastHalt = h.events[0];
        const lastResume = r.events[0];
        const halted = lastHalt !== undefined && (lastResume === undefined || lastHalt.seq > lastResume.seq);
        setHalt(halted, halted && lastHalt ? { by: String(lastHalt.data.by ?? lastHalt.actor), reason: lastHalt.reason, at: lastHalt.at } : null);
      } catch (e2) {
        state.problem = e2 instanceof Error ? e2.message : String(e2);
      }
    } else if (!(e instanceof ApiError && e.status === 401)) {
      state.problem = e instanceof Error ? e.message : String(e);
    }
  }
}

/** What the API answered (a read, or a halt or resume made here). */
export function setHalt(halted: boolean, halt: Halt | null): void {
  state.halted = halted;
  state.halt = halt;
  state.problem = null;
}

/** Shows the switch: reads it now and again whenever the ledger head moves; returns the function that stops. */
export function followHalt(): () => void {
  void readHalt();
  return watchHead(() => void readHalt());
}

export const haltState = {
  get halted(): boolean | null {
    return state.halted;
  },
  get halt(): Halt | null {
    return state.halt;
  },
  get problem(): string | null {
    return state.problem;
  },
};
