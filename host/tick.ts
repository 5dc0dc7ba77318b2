import type { Logger } from './log.ts';

/**
 * One step of the service's tick (every 10 s on the service's clock, or when a test calls it):
 * awaited in turn, a throw ends the tick (logged "tick failed" by its caller); or, `background`,
 * started and left running (a slow connector, a keychain round must not hold the tick up), its
 * failure logged.
 */
export interface TickStep {
  name: string;
  run(): unknown;
  background?: boolean;
}

/** The tick: its steps in order, as `host/app.ts` lists them from the areas (docs/architecture.md). */
export function createTick(log: Logger, steps: readonly TickStep[]): () => Promise<void> {
  return async () => {
    for (const step of steps) {
      if (step.background !== true) {
        await step.run();
        continue;
      }
      // Started now (a test awaiting the tick finds it under way), never awaited.
      const failed = (err: unknown) => log.error({ err, step: step.name }, 'a background step of the tick failed');
      try {
        const running = step.run();
        if (running instanceof Promise) running.catch(failed);
      } catch (err) {
        failed(err);
      }
    }
  };
}
