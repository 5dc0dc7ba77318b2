import { createRequire } from 'node:module';
import type * as Ldapts from 'ldapts';

let loaded: typeof Ldapts | null = null;

/**
 * The ldapts package, loaded when a directory is first used (a connection, or a filter checked
 * as settings are saved) rather than at start: an install without a directory never holds it
 * (docs/performance.md, "Idle memory"). Synchronous, so a filter is still checked in place.
 */
export function ldapts(): typeof Ldapts {
  return (loaded ??= createRequire(import.meta.url)('ldapts') as typeof Ldapts);
}
