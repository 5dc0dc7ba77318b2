/**
 * The plugin test kit's rule for tests that need a live peer (host/plugins/testkit.ts re-exports
 * it): a module of its own, small, so that the project's own test helpers (test/helpers/needs.ts,
 * which nearly every test file loads) do not load the whole kit with it.
 */
import type { ExecutionContext, TestFn } from 'ava';
import { connect } from 'node:net';

/**
 * Declares a test that needs a live peer (a database, the `git` binary). `missing` is null when
 * the peer is there, else why not: the test is then skipped with that reason in its title, and
 * under CI=true it fails instead, since CI must run it. `test` is ava's default export (the kit's
 * only tie to ava, a type).
 */
export function testNeeding<C = unknown>(test: TestFn<C>, missing: string | null, title: string, fn: (t: ExecutionContext<C>) => Promise<void>): void {
  if (missing === null) test(title, fn);
  else if (process.env.CI === 'true') test(title, async (t) => t.fail(`${missing} (under CI=true this test must run)`));
  else test.skip(`${title} (skipped: ${missing})`, () => {});
}

/**
 * Null when something accepts a TCP connection at `host`:`port` within 2 s, else why not
 * (`<what> not reachable at <host>:<port> (<reason>)`): the `missing` of {@link testNeeding} for
 * a server peer, found without the plugin under test (whose own failure must fail its test).
 */
export function nothingListening(what: string, host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2000 });
    const missing = (reason: string) => (socket.destroy(), resolve(`${what} not reachable at ${host}:${port} (${reason})`));
    socket.once('connect', () => (socket.destroy(), resolve(null)));
    socket.once('timeout', () => missing('no answer within 2 s'));
    socket.once('error', (e: NodeJS.ErrnoException) => missing(e.code ?? e.message));
  });
}
