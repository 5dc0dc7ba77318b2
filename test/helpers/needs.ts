import test, { type ExecutionContext } from 'ava';

/**
 * Declares a test that needs an outside component. `missing` is null when the component is
 * there, else why not: the test is then skipped with that reason in its title, and under
 * CI=true it fails instead, since CI must run it.
 */
export function testNeeding(missing: string | null, title: string, fn: (t: ExecutionContext) => Promise<void>): void {
  if (missing === null) test(title, fn);
  else if (process.env.CI === 'true') test(title, (t) => t.fail(`${missing} (under CI=true this test must run)`));
  else test.skip(`${title} (skipped: ${missing})`, () => {});
}
