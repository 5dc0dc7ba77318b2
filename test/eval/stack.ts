// What a run of the eval started, undone in reverse order when the run ends, however it ends.
import type { Teardowns } from '../helpers/daemon.ts';

/** A stack of teardowns with the `teardown` method the test helpers register on (daemon.ts). */
export class Stack implements Teardowns {
  readonly #fns: Array<() => unknown> = [];

  teardown(fn: () => unknown): void {
    this.#fns.push(fn);
  }

  /** Runs every teardown, newest first; one that throws does not stop the others. */
  async unwind(log: (s: string) => void): Promise<void> {
    while (this.#fns.length > 0) {
      const fn = this.#fns.pop()!;
      try {
        await fn();
      } catch (e) {
        log(`teardown failed: ${(e as Error).message}`);
      }
    }
  }
}
