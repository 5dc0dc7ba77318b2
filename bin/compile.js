// `prepack` and `postpack` (npm pack): the release package runs compiled JavaScript, so that the
// service never loads Node's TypeScript type stripper (about 20 MB of memory it never gives back;
// docs/performance.md, "Idle memory"). `node bin/compile.js` compiles host/, cli/, plugins/ and
// packs/ (their tests aside) with the project's TypeScript (tsconfig.build.json: `x.ts` becomes
// `x.js` beside it, its relative imports rewritten from `.ts` to `.js`); package.json `files`
// then packs the `.js` and leaves the `.ts` out. `node bin/compile.js clean` removes what it
// wrote. A checkout runs the TypeScript as before (`npm start`, `npm test`); docs/install.md,
// "Production install". Plain JavaScript: npm may run it on any Node.js.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIRS = ['host', 'cli', 'plugins', 'packs'];
const SOURCE = /\.([mc]?)ts$/;

/** Every TypeScript source below DIRS (no declaration files), with the compiled file it becomes. */
function sources() {
  const found = [];
  const walk = (dir) => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, d.name);
      if (d.isDirectory()) {
        if (d.name !== 'node_modules') walk(p);
      } else if (SOURCE.test(d.name) && !d.name.endsWith('.d.ts')) {
        found.push({ source: p, compiled: p.replace(SOURCE, '.$1js'), test: p.split(path.sep).includes('test') });
      }
    }
  };
  for (const dir of DIRS) if (existsSync(path.join(ROOT, dir))) walk(path.join(ROOT, dir));
  return found;
}

/** Removes the compiled file of every source: what a compile wrote (no `.js` beside a `.ts` is ever source). */
function clean() {
  let removed = 0;
  for (const f of sources()) {
    if (existsSync(f.compiled)) {
      rmSync(f.compiled);
      removed++;
    }
  }
  return removed;
}

function compile() {
  clean();
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  if (!existsSync(tsc)) {
    process.stderr.write('oncall-engineer: packing compiles the TypeScript, which needs the dev dependencies (npm ci, then npm pack).\n');
    process.exit(1);
  }
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) {
    clean();
    process.stderr.write(`oncall-engineer: compiling the TypeScript for the package failed (tsc exit ${r.status ?? r.signal}).\n`);
    process.exit(1);
  }
  const missing = sources().filter((f) => !f.test && !existsSync(f.compiled));
  if (missing.length > 0) {
    clean();
    process.stderr.write(`oncall-engineer: tsc wrote no JavaScript for ${missing.map((f) => path.relative(ROOT, f.source)).join(', ')}.\n`);
    process.exit(1);
  }
  process.stdout.write(`oncall-engineer: compiled ${sources().filter((f) => !f.test).length} TypeScript modules to JavaScript for the package.\n`);
}

if (process.argv[2] === undefined) compile();
else if (process.argv[2] === 'clean') process.stdout.write(`oncall-engineer: removed ${clean()} compiled modules.\n`);
else {
  process.stderr.write('usage: node bin/compile.js [clean]\n');
  process.exit(2);
}
