// `prepack` and `postpack` (npm pack): the release package carries the lockfile. npm never packs
// package-lock.json, but it does pack npm-shrinkwrap.json, which `npm ci` reads the same way; so
// the lockfile is copied to npm-shrinkwrap.json for the pack and removed after it. The package is
// then installed with exactly the versions and hashes the source was tested with
// (docs/install.md, "Production install"). Plain JavaScript: npm may run it on any Node.js.
import { copyFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const shrinkwrap = path.join(ROOT, 'npm-shrinkwrap.json');

if (process.argv[2] === 'prepack') copyFileSync(path.join(ROOT, 'package-lock.json'), shrinkwrap);
else if (process.argv[2] === 'postpack') rmSync(shrinkwrap, { force: true });
else {
  process.stderr.write('usage: node bin/pack-lockfile.js prepack|postpack\n');
  process.exit(2);
}
