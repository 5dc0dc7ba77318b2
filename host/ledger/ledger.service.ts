import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Trx } from '../storage/db.ts';
import type { UnitOfWork } from '../storage/unit-of-work.ts';
import { canonicalJson, entryHash, entryText, toEvent, type ChainHead, type EventInput, type LedgerEvent, type StoredEntry } from './entry.ts';
import type { Chained, LedgerRepo } from './ledger.repo.ts';
import type { LedgerFilter } from './ledger.model.ts';
import { findProblem } from '../json-limits.ts';
import { redactSecrets } from './redact.ts';
import { isDeadlock, isStorageFailure } from '../storage/failures.ts';

/** An event checked, redacted and serialised, waiting only for its place in the chain. */
interface Prepared {
  type: string;
  actor: string;
  reason: string;
  data: string;
  trace: string | null;
}

interface Waiting {
  event: Prepared;
  resolve(head: ChainHead): void;
  reject(err: unknown): void;
}

/** An event as a commit appended it: its type, its data as the canonical JSON that was hashed, its trace. */
export interface CommittedEvent {
  readonly type: string;
  readonly data: string;
  readonly trace: string | null;
}

/**
 * Records one event, or several in order, for the current transaction (see Ledger.transact): an
 * event it refuses throws now; the events are appended when the transaction's work is done.
 */
export type RecordEvent = (event: EventInput | EventInput[]) => Promise<void>;

export const TYPE_PATTERN = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$/;
const MAX_DATA_BYTES = 64 * 1024;
const MAX_BATCH = 1000;

/**
 * The hash-chained audit log. Two ways in:
 * - `append(event)`: a standalone event. Concurrent calls are grouped into one transaction
 *   (group commit), which is what makes 8 writers fast; each caller's promise resolves only
 *   after its commit.
 * - `transact(fn)`: an audited change. The change and its events commit in one transaction, so
 *   when the ledger cannot be written the change is not made either (fail closed).
 * Either way a failure to write answers `ledger_unavailable` (503).
 */
export class Ledger {
  #queue: Waiting[] = [];
  #flushing = false;
  #listeners: Array<(head: ChainHead) => void> = [];
  #eventListeners: Array<(events: readonly CommittedEvent[]) => void> = [];

  readonly repo: LedgerRepo;
  readonly #clock: Clock;
  readonly #work: UnitOfWork;

  constructor(deps: { repo: LedgerRepo; clock: Clock; work: UnitOfWork }) {
    this.repo = deps.repo;
    this.#clock = deps.clock;
    this.#work = deps.work;
  }

  /** Called with the new head after every commit that appended events. */
  onCommit(listener: (head: ChainHead) => void): void {
    this.#listeners.push(listener);
  }

  /** Called after every commit with the events it appended, in order (this process's own: counters in GET /metrics). */
  onEvents(listener: (events: readonly CommittedEvent[]) => void): void {
    this.#eventListeners.push(listener);
  }

  append(input: EventInput): Promise<ChainHead> {
    let event: Prepared;
    try {
      event = prepare(input);
    } catch (e) {
      return Promise.reject(e);
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({ event, resolve, reject });
      if (!this.#flushing) {
        // Start on the next turn, not now: writers whose previous append just resolved are
        // still queued as microtasks, and waiting for them lets one commit carry them all.
        this.#flushing = true;
        setImmediate(() => void this.#flush());
      }
    });
  }

  /**
   * Runs `fn` in a transaction; `record` checks events at once and appends them, in the order
   * recorded, when `fn` is done: one lock of the chain head, one insert and one head update, just
   * before the commit (docs/ledger.md, "Appending"). The head is locked for as short a time
   * as the change allows: from the end of `fn` to the commit, or, with `headFirst`, from the start
   * (the lock taken then is the one the append uses).
   */
  async transact<T>(fn: (trx: Trx, record: RecordEvent) => Promise<T>, opts: { headFirst?: boolean } = {}): Promise<T> {
    let done: { last: ChainHead | null; events: Prepared[] } = { last: null, events: [] };
    const result = await this.#withStorage(() =>
      this.#work.run(async (trx) => {
        // A run again after a deadlock starts over: nothing of a rolled-back run was committed.
        done = { last: null, events: [] };
        // Changes that touch rows many writers insert at once (the held set) take the chain
        // head first: on MySQL, locking rows that do not exist yet takes gap locks, and two such
        // transactions inserting into the same gap deadlock. The head lock queues them instead,
        // which costs nothing more, since each would wait for the head to append anyway.
        const locked = opts.headFirst === true ? await this.#guarded(() => this.repo.lockHead(trx)) : null;
        const pending: Prepared[] = [];
        const record = async (input: EventInput | EventInput[]): Promise<void> => {
          pending.push(...(Array.isArray(input) ? input : [input]).map(prepare));
        };
        const out = await fn(trx, record);
        if (pending.length > 0) {
          const { head } = await this.#guarded(() => this.repo.appendIn(trx, (h) => this.#chain(h, pending), locked));
          done = { last: head, events: this.#eventListeners.length > 0 ? pending : [] };
        }
        return out;
      }),
    );
    if (done.last !== null) this.#committed(done.last, done.events);
    return result;
  }

  async head(): Promise<ChainHead> {
    return this.#withStorage(() => this.repo.head());
  }

  async find(filter: LedgerFilter): Promise<{ events: LedgerEvent[]; more: boolean }> {
    const { rows, more } = await this.#withStorage(() => this.repo.find(filter));
    return { events: rows.map(toEvent), more };
  }

  async #flush(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, MAX_BATCH);
      try {
        const { rows, head } = await this.#guarded(() =>
          this.repo.appendAlone((h) =>
            this.#chain(
              h,
              batch.map((w) => w.event),
            ),
          ),
        );
        batch.forEach((w, i) => w.resolve({ seq: rows[i]!.seq, hash: rows[i]!.hash }));
        this.#committed(
          head,
          batch.map((w) => w.event),
        );
      } catch (e) {
        const err = e instanceof AppError ? e : new AppError('ledger_unavailable');
        for (const w of batch) w.reject(err);
      }
      // Same reason as in append(): let the writers just resolved queue their next events.
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.#flushing = false;
  }

  /** Places events after `head`: their seqs, timestamps and hashes. */
  #chain(head: ChainHead, events: Prepared[]): Chained {
    const at = this.#clock.now().toISOString();
    const rows: StoredEntry[] = [];
    let h = head;
    for (const e of events) {
      const seq = h.seq + 1;
      const hash = entryHash(h.hash, entryText({ at, ...e }, seq));
      rows.push({ seq, at, ...e, prev_hash: h.hash, hash });
      h = { seq, hash };
    }
    return { rows, head: h };
  }

  /**
   * Any failure to write the chain is `ledger_unavailable`, whatever the storage said; but a
   * deadlock goes up as it is, for the unit of work to run the transaction again.
   */
  async #guarded<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (isDeadlock(e)) throw e;
      throw new AppError('ledger_unavailable', e instanceof AppError ? e.message : undefined);
    }
  }

  #committed(head: ChainHead, events: readonly CommittedEvent[]): void {
    for (const l of this.#listeners) l(head);
    if (events.length > 0) for (const l of this.#eventListeners) l(events);
  }

  async #withStorage<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof AppError) throw e;
      // A deadlock still there after the unit of work's tries: the storage cannot take the change now.
      if (isStorageFailure(e) || isDeadlock(e)) throw new AppError('ledger_unavailable');
      throw e;
    }
  }
}

function prepare(input: EventInput): Prepared {
  if (typeof input.type !== 'string' || input.type.length > 100 || !TYPE_PATTERN.test(input.type)) {
    throw new AppError('invalid_event_type', 'type must be a dotted lower-case name such as human.deploy');
  }
  if (typeof input.actor !== 'string' || input.actor.length === 0 || input.actor.length > 255) {
    throw new AppError('invalid_body', 'actor must be 1 to 255 characters');
  }
  const reason = input.reason ?? '';
  if (typeof reason !== 'string' || reason.length > 4000) throw new AppError('invalid_body', 'reason must be at most 4000 characters');
  const trace = input.trace ?? null;
  if (trace !== null && (typeof trace !== 'string' || trace.length === 0 || trace.length > 128)) {
    throw new AppError('invalid_body', 'trace must be 1 to 128 characters');
  }
  const raw = input.data ?? {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new AppError('invalid_body', 'data must be an object');
  // The hash must cover exactly what the database gives back: a lone surrogate would be
  // stored as U+FFFD and the entry would never verify again. Bounded depth keeps every stored
  // event readable and every secret within reach of the redaction.
  for (const [name, text] of [
    ['type', input.type],
    ['actor', input.actor],
    ['reason', reason],
    ['trace', trace ?? ''],
  ] as const) {
    if (!text.isWellFormed()) throw new AppError('invalid_body', `${name} is not well-formed Unicode (a lone surrogate)`);
  }
  const problem = findProblem(raw);
  if (problem !== null) throw new AppError('invalid_body', `data${problem.path === '' ? '' : `.${problem.path}`}: ${problem.message}`);
  const data = canonicalJson(redactSecrets(raw));
  if (Buffer.byteLength(data) > MAX_DATA_BYTES) throw new AppError('invalid_body', 'data must be at most 64 KiB of JSON');
  return { type: input.type, actor: input.actor, reason, data, trace };
}
