import v8 from 'node:v8';
import vm from 'node:vm';

/**
 * Start-up (compiling the host's modules, migrating, loading plugins) grows V8's young
 * generation to its largest size, 64 MB on a machine with plenty of memory, and an idle service
 * never allocates enough to shrink it again. One full collection once the service is serving
 * gives those pages back (about 50 MB of RSS; docs/performance.md, "Idle memory"). Under load the
 * young generation grows again as V8 sees fit: this changes nothing but the idle footprint.
 */
export function releaseStartupGarbage(): void {
  // `gc` exists only with --expose-gc; setting the flag now exposes it to a new context only,
  // not to the host's own globals.
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as (options?: { type: 'major' }) => void;
  gc();
}
