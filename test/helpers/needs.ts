import test, { type ExecutionContext } from 'ava';
import { testNeeding as declareNeeding } from '../../host/plugins/testkit-needs.ts';

/**
 * Declares a test that needs an outside component. `missing` is null when the component is
 * there, else why not: the test is then skipped with that reason in its title, and under
 * CI=true it fails instead, since CI must run it. The rule is the plugin test kit's
 * (`testNeeding` in host/plugins/testkit-needs.ts, offered by the contract's test kit), which plugin folders' own tests use.
 */
export function testNeeding(missing: string | null, title: string, fn: (t: ExecutionContext) => Promise<void>): void {
  declareNeeding(test, missing, title, fn);
}
