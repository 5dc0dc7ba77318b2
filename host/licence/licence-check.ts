import { createHash, randomBytes } from 'node:crypto';
import { DAY, HOUR, type Clock } from '../clock.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { LicenceCheckRepo } from './licence-check.repo.ts';
import type { Licence, LicenceStatus } from './licence.ts';
import { clip } from '../text.ts';

/** How often the licence is confirmed with the licence server. */
export const CONFIRM_EVERY_MS = 6 * HOUR;
/** How long one confirmation may take before it counts as unreachable. */
export const CONFIRM_TIMEOUT_MS = 15_000;
/** Path of the confirmation call under SERVICE_LICENCE_SERVER. */
export const CONFIRM_PATH = '/v1/confirm';

export type LicenceCheckMode = 'auto' | 'strict' | 'offline';
export type ConfirmResult = 'valid' | 'revoked' | 'unreachable' | 'error';

/** What the install sends: enough to find the licence, never a secret. */
export interface ConfirmRequest {
  licence_id: string | null;
  customer: string;
  tier: Licence['tier'];
  /** The licence's own signature: names exactly one issued licence. */
  signature: string;
  /** This install's fingerprint (the licence server counts installs by it). */
  install: string;
  /** The service version. */
  version: string;
}

/** What the licence server answers (200, JSON). Anything else is `error`. */
export interface ConfirmAnswer {
  status: 'valid' | 'revoked';
  checked_at: string;
  reason?: string;
}

export interface LicenceCheckRow {
  id: number;
  licence_ref: string | null;
  next_due_ms: number;
  last_attempt_at: string | null;
  last_confirmed_at: string | null;
  last_result: ConfirmResult | null;
  last_problem: string | null;
  unconfirmed_since: string | null;
  revoked_ref: string | null;
  claimed_by: string | null;
}

/** The confirmation as doctor and the status show it. */
export interface ConfirmationView {
  mode: LicenceCheckMode;
  /** Where confirmations go; null when SERVICE_LICENCE_SERVER is unset (nothing is asked). */
  server: string | null;
  /** Whether the licence in force is confirmed online (not for offline, no server, a trial, no licence). */
  applies: boolean;
  last_attempt_at: string | null;
  last_confirmed_at: string | null;
  last_result: ConfirmResult | null;
  last_problem: string | null;
  next_due_at: string | null;
  revoked: boolean;
  /** strict only: when the licence stops counting if nothing confirms it before. */
  lapses_at: string | null;
}

/** Names a licence without repeating its signature: sha256 hex of the signature. */
export function licenceRef(licence: Pick<Licence, 'signature'>): string {
  return createHash('sha256').update(licence.signature).digest('hex');
}

/** How long a strict install keeps working unconfirmed: the licence's grace_days, at least a day. */
export function confirmationGraceMs(licence: Pick<Licence, 'grace_days'>): number {
  return Math.max(licence.grace_days, 1) * DAY;
}

export interface LicenceCheckDeps {
  repo: LicenceCheckRepo;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  mode: LicenceCheckMode;
  /** Base address of the licence server; null: nothing is asked. */
  server: string | null;
  fingerprint: string;
  version: string;
  timeoutMs?: number;
}

/**
 * Confirms the licence in force with the vendor's licence server every 6 hours, on the tick:
 * - `auto`: confirms when the server answers; carries on when it cannot be reached.
 * - `strict`: as auto, but a licence left unconfirmed for longer than its grace_days (at least a
 *   day) counts as `unconfirmed`, which is not usable: the install falls back to `setup`.
 * - `offline`: never asks.
 * Whatever the mode, a `revoked` answer makes that licence count as `revoked` (not usable) until
 * another licence is installed or the server answers `valid` for it again.
 * The due time lives in the database and is claimed with a conditional update, so one host process
 * asks per period; every process re-reads the row on its tick and applies the same rules.
 */
export class LicenceCheck {
  readonly mode: LicenceCheckMode;
  readonly server: string | null;
  readonly #me = randomBytes(8).toString('hex');
  #state: LicenceCheckRow | null = null;
  readonly #refs = new WeakMap<Licence, string>();
  readonly #d: LicenceCheckDeps;

  constructor(deps: LicenceCheckDeps) {
    this.#d = deps;
    this.mode = deps.mode;
    this.server = deps.server;
  }

  /** Reads the shared state (every tick, and once at start). */
  async load(): Promise<void> {
    this.#state = await this.#d.repo.get();
  }

  #ref(licence: Licence): string {
    let ref = this.#refs.get(licence);
    if (ref === undefined) {
      ref = licenceRef(licence);
      this.#refs.set(licence, ref);
    }
    return ref;
  }

  /** The hook LicenceService applies on every status read (see ConfirmationHook). */
  readonly hook = (licence: Licence, status: LicenceStatus): LicenceStatus => {
    const st = this.#state;
    if (st === null) return status;
    const ref = this.#ref(licence);
    if (st.revoked_ref === ref) return { ...status, state: 'revoked', in_grace: false };
    if (this.#lapsed(licence, st, ref) && (status.state === 'valid' || status.state === 'grace')) return { ...status, state: 'unconfirmed', in_grace: false };
    return status;
  };

  #lapsesAt(licence: Licence, st: LicenceCheckRow, ref: string): number | null {
    if (this.mode !== 'strict' || this.server === null || licence.tier === 'trial' || st.licence_ref !== ref) return null;
    const since = st.last_confirmed_at ?? st.unconfirmed_since;
    return since === null ? null : Date.parse(since) + confirmationGraceMs(licence);
  }

  #lapsed(licence: Licence, st: LicenceCheckRow, ref: string): boolean {
    const at = this.#lapsesAt(licence, st, ref);
    return at !== null && this.#d.clock.now().getTime() > at;
  }

  /** Where confirmation stands, for doctor and the status. */
  async view(licence: Licence | null): Promise<ConfirmationView> {
    const st = this.#state;
    const applies = this.mode !== 'offline' && this.server !== null && licence !== null && licence.tier !== 'trial';
    const ref = licence === null ? null : this.#ref(licence);
    const mine = st !== null && ref !== null && st.licence_ref === ref;
    const lapses = licence !== null && st !== null && ref !== null ? this.#lapsesAt(licence, st, ref) : null;
    return {
      mode: this.mode,
      server: this.server,
      applies,
      last_attempt_at: mine ? st.last_attempt_at : null,
      last_confirmed_at: mine ? st.last_confirmed_at : null,
      last_result: mine ? st.last_result : null,
      last_problem: mine ? st.last_problem : null,
      next_due_at: applies && mine && st.next_due_ms > 0 ? new Date(st.next_due_ms).toISOString() : applies ? this.#d.clock.now().toISOString() : null,
      revoked: st !== null && ref !== null && st.revoked_ref === ref,
      lapses_at: lapses === null ? null : new Date(lapses).toISOString(),
    };
  }

  /**
   * The tick's share: re-reads the shared state, and when a confirmation is due and this process
   * claims it, asks the server and records the outcome. Answers what it asked (null: nothing).
   */
  async tick(licence: Licence | null): Promise<ConfirmResult | null> {
    await this.load();
    if (this.mode === 'offline' || this.server === null) return null;
    // A trial is signed by this install itself: the licence server has never heard of it.
    if (licence === null || licence.tier === 'trial') return null;
    const ref = this.#ref(licence);
    const now = this.#d.clock.now();
    if (this.#state === null) await this.#d.repo.ensure();
    if (this.#state?.licence_ref !== ref) await this.#d.repo.reset(ref, now.toISOString());
    if (!(await this.#d.repo.claim(ref, now.getTime(), now.getTime() + CONFIRM_EVERY_MS, this.#me, now.toISOString()))) {
      await this.load();
      return null;
    }
    const answer = await this.#ask(licence);
    const at = this.#d.clock.now().toISOString();
    const who = { customer: licence.customer, tier: licence.tier, licence_id: licence.id ?? null, server: this.server };
    await this.#d.ledger.transact(async (trx, record) => {
      if (answer.result === 'valid') {
        await this.#d.repo.finish(trx, ref, {
          last_result: 'valid',
          last_confirmed_at: at,
          last_problem: null,
          unconfirmed_since: null,
          ...(this.#state?.revoked_ref === ref ? { revoked_ref: null } : {}),
        });
        await record({
          type: 'licence.confirmed',
          actor: 'licence-check',
          reason: `licence for ${licence.customer} confirmed by the licence server`,
          data: { ...who, checked_at: answer.checkedAt },
        });
      } else if (answer.result === 'revoked') {
        await this.#d.repo.finish(trx, ref, { last_result: 'revoked', last_problem: answer.problem, revoked_ref: ref });
        await record({
          type: 'licence.revoked',
          actor: 'licence-check',
          reason: `the licence server says the licence for ${licence.customer} is revoked${answer.problem === null ? '' : `: ${answer.problem}`}`,
          data: { ...who, checked_at: answer.checkedAt },
        });
      } else {
        await this.#d.repo.finish(trx, ref, { last_result: answer.result, last_problem: answer.problem });
        const st = await this.#d.repo.get(trx);
        const lapses = st === null ? null : this.#lapsesAt(licence, st, ref);
        await record({
          type: 'licence.confirmation_failed',
          actor: 'licence-check',
          reason: `could not confirm the licence: ${answer.problem ?? answer.result}`,
          data: {
            ...who,
            mode: this.mode,
            result: answer.result,
            last_confirmed_at: st?.last_confirmed_at ?? null,
            lapses_at: lapses === null ? null : new Date(lapses).toISOString(),
          },
        });
      }
    });
    await this.load();
    return answer.result;
  }

  async #ask(licence: Licence): Promise<{ result: ConfirmResult; problem: string | null; checkedAt: string | null }> {
    const body: ConfirmRequest = {
      licence_id: licence.id ?? null,
      customer: licence.customer,
      tier: licence.tier,
      signature: licence.signature,
      install: this.#d.fingerprint,
      version: this.#d.version,
    };
    let res: Response;
    try {
      res = await fetch(`${this.server}${CONFIRM_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.#d.timeoutMs ?? CONFIRM_TIMEOUT_MS),
      });
    } catch (e) {
      return { result: 'unreachable', problem: `cannot reach ${this.server}: ${reason(e)}`, checkedAt: null };
    }
    let answer: unknown;
    try {
      answer = await res.json();
    } catch {
      answer = null;
    }
    if (res.status !== 200) return { result: 'error', problem: `${this.server} answered ${res.status}`, checkedAt: null };
    const a = answer as Partial<ConfirmAnswer> | null;
    const checkedAt = typeof a?.checked_at === 'string' ? a.checked_at.slice(0, 40) : null;
    const why = typeof a?.reason === 'string' ? clip(a.reason, 500) : null;
    if (a?.status === 'valid') return { result: 'valid', problem: null, checkedAt };
    if (a?.status === 'revoked') return { result: 'revoked', problem: why, checkedAt };
    return { result: 'error', problem: `${this.server} answered something other than {status: valid|revoked}`, checkedAt: null };
  }
}

function reason(e: unknown): string {
  if (e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError')) return 'no answer in time';
  const cause = (e as { cause?: { code?: string; message?: string } } | null)?.cause;
  return cause?.code ?? cause?.message ?? (e instanceof Error ? e.message : String(e));
}
