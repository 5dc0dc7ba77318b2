import type { Obstacle, ReadFailure } from '../plugins/contract.ts';

/** The five obstacle kinds of the spec's study, word for word. */
export const OBSTACLES: readonly Obstacle[] = [
  'nothing connected can read it',
  'several connections could answer',
  "the data isn't there",
  'the read was refused or failed',
  "it can't be placed",
];

export const isObstacle = (v: unknown): v is Obstacle => typeof v === 'string' && (OBSTACLES as readonly string[]).includes(v);

/** Failures the host's readers threw: a check cannot forge one to pass off its own error. */
const made = new WeakSet<object>();

/** A read that could not be made, thrown by a reader of the check context. */
export function readFailure(obstacle: Obstacle, problem: string): ReadFailure {
  const e = Object.assign(new Error(problem), { obstacle, problem, name: 'ReadFailure' }) as ReadFailure;
  made.add(e);
  return e;
}

/** The failure, when `e` is one a reader of this host threw. */
export function asReadFailure(e: unknown): ReadFailure | null {
  return typeof e === 'object' && e !== null && made.has(e) ? (e as ReadFailure) : null;
}
