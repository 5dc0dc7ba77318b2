/**
 * The oldest Node.js the host runs on (type stripping on by default, the APIs it uses). Kept in
 * step with package.json `engines`; bin/run.js and bin/postinstall.js check the same floor.
 */
export const MIN_NODE = [22, 20] as const;

/** Why this runtime cannot run the service, or null when it can. */
export function runtimeProblem(version: string = process.versions.node, execPath: string = process.execPath): string | null {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1])) return null;
  return (
    `This is Node.js ${version} (${execPath}); the service needs ${MIN_NODE.join('.')} or newer.\n` +
    `  \`npm install\` brings Node.js 24 into node_modules/.bin: start with \`npm start\`, or run\n` +
    `  node_modules/.bin/node host/main.ts (see docs/install.md).`
  );
}
