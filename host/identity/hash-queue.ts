import { AppError } from '../errors.ts';

/**
 * Who waits for an scrypt derivation, and in which order. At most `concurrency` run at once
 * (scrypt takes 32 MiB and about 160 ms of a core each). The others wait by client (an address,
 * docs/sign-in.md), and clients take turns, one derivation each (round robin), so one client's
 * burst never runs ahead of another's single try. A free slot goes to the first client in turn
 * of **good standing** (no wrong password in this host process for STANDING_MS; the service's
 * own work always is), else to the first in turn. Each client may have `perClient` waiting and
 * the whole queue `waiting`; beyond that a try is refused at once with 503 `sign_in_busy` (and
 * Retry-After: 1), never queued without bound; a try of good standing finding the queue full
 * takes the place of the last waiter of a client that gave a wrong password (else, if it has
 * none waiting itself, of the client with the most waiting), which is refused instead. So 120 wrong passwords from 12 addresses do not make a valid sign-in from another
 * address wait behind them: once their first tries have failed, it waits for the derivations
 * under way and nothing else.
 */
export const STANDING_MS = 10 * 60_000;
/** Clients remembered for their standing; the oldest is forgotten beyond this. */
const REMEMBERED = 10_000;

export interface HashQueueLimits {
  concurrency: number;
  perClient: number;
  waiting: number;
}

/** The service's own derivations (setting a password): always of good standing. */
export const INTERNAL_CLIENT = '(internal)';

interface Waiter {
  client: string;
  nowMs: number;
  start: () => void;
  refuse: (e: Error) => void;
}

export class HashQueue {
  readonly #limits: HashQueueLimits;
  #running = 0;
  #waiting = 0;
  /** Waiters by client, clients in turn order (round robin: a served client goes to the back). */
  readonly #queue = new Map<string, Waiter[]>();
  /** When each client last gave a wrong password. */
  readonly #wrongAt = new Map<string, number>();

  constructor(limits: HashQueueLimits) {
    this.#limits = limits;
  }

  /** How many derivations run and wait now (for tests). */
  get load(): { running: number; waiting: number } {
    return { running: this.#running, waiting: this.#waiting };
  }

  /** Remembers that `client` gave a wrong password at `nowMs` (its tries then wait behind those of good standing). */
  wrong(client: string, nowMs: number): void {
    if (client === INTERNAL_CLIENT) return;
    this.#wrongAt.delete(client);
    this.#wrongAt.set(client, nowMs);
    if (this.#wrongAt.size > REMEMBERED) this.#wrongAt.delete(this.#wrongAt.keys().next().value!);
  }

  /** Runs `fn` when its turn comes; throws 503 `sign_in_busy` at once when it cannot wait. */
  async run<T>(client: string, nowMs: number, fn: () => Promise<T>): Promise<T> {
    if (this.#running < this.#limits.concurrency && this.#waiting === 0) this.#running++;
    else await this.#wait(client, nowMs);
    try {
      return await fn();
    } finally {
      this.#running--;
      this.#next();
    }
  }

  #good(client: string, nowMs: number): boolean {
    const at = this.#wrongAt.get(client);
    return at === undefined || nowMs - at >= STANDING_MS;
  }

  #wait(client: string, nowMs: number): Promise<void> {
    const mine = this.#queue.get(client) ?? [];
    if (client !== INTERNAL_CLIENT && mine.length >= this.#limits.perClient) throw busy('this address already has sign-ins waiting; try again in a moment');
    if (this.#waiting >= this.#limits.waiting) {
      // Full: a try of good standing takes the place of the last waiter of a client that gave a
      // wrong password, else (when it has none waiting) of the client with the most waiting.
      const bumped = this.#good(client, nowMs) ? (this.#lastWrong(nowMs) ?? (mine.length === 0 ? this.#lastOfMost() : undefined)) : undefined;
      if (bumped === undefined) throw busy('too many sign-ins are being checked at once; try again in a moment');
      bumped.refuse(busy('too many sign-ins are being checked at once; try again in a moment'));
    }
    return new Promise<void>((start, refuse) => {
      mine.push({ client, nowMs, start, refuse });
      this.#queue.set(client, mine);
      this.#waiting++;
    });
  }

  /** Starts the next waiters: the first client in turn of good standing, else the first in turn. */
  #next(): void {
    while (this.#running < this.#limits.concurrency && this.#waiting > 0) {
      let chosen: string | undefined;
      for (const [client, waiters] of this.#queue) {
        chosen ??= client;
        if (this.#good(client, waiters[0]!.nowMs)) {
          chosen = client;
          break;
        }
      }
      const waiters = this.#queue.get(chosen!)!;
      const w = waiters.shift()!;
      this.#queue.delete(chosen!);
      if (waiters.length > 0) this.#queue.set(chosen!, waiters);
      this.#waiting--;
      this.#running++;
      w.start();
    }
  }

  /** Takes out the last waiter of the client with the most waiting, if it has more than one. */
  #lastOfMost(): Waiter | undefined {
    let most: string | undefined;
    for (const [client, waiters] of this.#queue)
      if (waiters.length > 1 && (most === undefined || waiters.length > this.#queue.get(most)!.length)) most = client;
    if (most === undefined) return undefined;
    this.#waiting--;
    return this.#queue.get(most)!.pop()!;
  }

  /** Takes out the last waiter of the last client in turn that is not of good standing. */
  #lastWrong(nowMs: number): Waiter | undefined {
    for (const client of [...this.#queue.keys()].reverse()) {
      if (this.#good(client, nowMs)) continue;
      const waiters = this.#queue.get(client)!;
      const w = waiters.pop()!;
      if (waiters.length === 0) this.#queue.delete(client);
      this.#waiting--;
      return w;
    }
    return undefined;
  }
}

const busy = (message: string) => new AppError('sign_in_busy', message, { 'retry-after': '1' });
