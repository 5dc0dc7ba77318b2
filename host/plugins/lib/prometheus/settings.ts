import type { CheckContext, SettingsReader } from '../../contract.ts';
import { durationSeconds, quote } from './promql.ts';

/**
 * A cause's settings read with their types checked (the host merged the estate's overrides over
 * the defaults). A setting that cannot be used makes the check answer unknown with the reason,
 * instead of sending PromQL that cannot mean what the operator wanted.
 */
export class Settings implements SettingsReader {
  readonly #ctx: CheckContext;
  readonly #problems: string[] = [];

  constructor(ctx: CheckContext) {
    this.#ctx = ctx;
  }

  /** A number that must be above `min` (and at most `max`). */
  number(name: string, min: number, max = Infinity): number {
    const v = this.#ctx.settings[name];
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= min || v > max) {
      this.#problems.push(`setting ${name} must be a number above ${min}${max === Infinity ? '' : ` and at most ${max}`}, not ${JSON.stringify(v)}`);
      return NaN;
    }
    return v;
  }

  /** A PromQL duration (`5m`), answered as written and in seconds. */
  duration(name: string): { text: string; s: number } {
    const v = this.#ctx.settings[name];
    const s = typeof v === 'string' ? durationSeconds(v) : null;
    if (typeof v !== 'string' || s === null) {
      this.#problems.push(`setting ${name} must be a PromQL duration such as 5m, not ${JSON.stringify(v)}`);
      return { text: '5m', s: 300 };
    }
    return { text: v, s };
  }

  /** A metric or label name. */
  name(name: string): string {
    const v = this.#ctx.settings[name];
    if (typeof v !== 'string' || !/^[A-Za-z_:][A-Za-z0-9_:]*$/.test(v)) {
      this.#problems.push(`setting ${name} must be a Prometheus metric or label name, not ${typeof v === 'string' ? quote(v) : JSON.stringify(v)}`);
      return 'invalid';
    }
    return v;
  }

  /** The unknown answer's reason when a setting cannot be used, else null. */
  problem(): string | null {
    return this.#problems.length === 0 ? null : `the cause's settings cannot be used: ${this.#problems.join('; ')}`;
  }
}
