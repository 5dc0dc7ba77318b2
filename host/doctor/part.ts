import type { CheckLevel, DoctorComponent } from './doctor.service.ts';

/** A component's finding before it is named: its status, what was seen, and what to do unless fine. */
export type Part = Omit<DoctorComponent, 'name'>;

export const part = (status: CheckLevel, detail: string, fix: string | null = null): Part => ({ status, detail, fix: status === 'ok' ? null : fix });

/** A component whose state cannot be read is a failed component naming why, never a failed doctor. */
export async function attemptPart(fn: () => Promise<Part>, what: string, fix: string): Promise<Part> {
  try {
    return await fn();
  } catch (e) {
    return part('fail', `${what}: ${e instanceof Error ? e.message : String(e)}`, fix);
  }
}

export const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
