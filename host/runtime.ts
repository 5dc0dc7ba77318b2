import { MODULE_EXT } from './compiled.ts';

/**
 * The oldest Node.js the host runs on (type stripping on by default, the APIs it uses).
 * bin/run.js and bin/postinstall.js (plain JavaScript, so that an old Node.js can read them) hold
 * the same floor; test/operations/runtime.test.ts keeps the three equal. package.json has no `engines`: npm
 * runs on the machine's own Node.js and would warn "Unsupported engine" on every `npm start`
 * even though the scripts run on the Node.js 24 that `npm install` brought.
 */
export const MIN_NODE = [22, 20] as const;

/** How to start the host on the Node.js 24 of node_modules/.bin: a checkout's TypeScript, or the release package's compiled JavaScript (host/compiled.ts). */
const START =
  MODULE_EXT === '.js'
    ? 'start with node_modules/.bin/node --no-experimental-strip-types host/main.js'
    : 'start with `npm start`, or run\n  node_modules/.bin/node host/main.ts';

/** Why this runtime cannot run the service, or null when it can. */
export function runtimeProblem(version: string = process.versions.node, execPath: string = process.execPath): string | null {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1])) return null;
  return (
    `This is Node.js ${version} (${execPath}); the service needs ${MIN_NODE.join('.')} or newer.\n` +
    `  \`npm install\` brings Node.js 24 into node_modules/.bin: ${START} (see docs/install.md).`
  );
}
