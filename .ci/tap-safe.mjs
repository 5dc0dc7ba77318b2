// Preloaded into ava's own process by .ci/run (NODE_OPTIONS=--import): ava's TAP reporter dumps a
// failed test's error with js-yaml (through supertap), which throws on an own property whose
// value is undefined (a driver's error, say) and takes the whole run down with it: one failing
// test would lose every count after it. Such values are left out of the dump instead
// (js-yaml's skipInvalid). Every other Node.js process the tests start loads this and does nothing.
import { createRequire } from 'node:module';
import path from 'node:path';

const main = process.argv[1] ?? '';
if (path.basename(main) === 'ava' || /[\\/]ava[\\/]entrypoints[\\/]cli\.mjs$/.test(main)) {
  try {
    const require = createRequire(path.join(process.cwd(), 'package.json'));
    const fromAva = createRequire(require.resolve('ava'));
    const fromSupertap = createRequire(fromAva.resolve('supertap'));
    const yaml = fromSupertap('js-yaml');
    const dump = yaml.safeDump;
    yaml.safeDump = (value, options) => dump(value, { ...options, skipInvalid: true });
  } catch {
    // Not this project's ava: nothing to mend.
  }
}
