#!/usr/bin/env -S node --max-semi-space-size=4
// A small young generation keeps `ledger-verify` of millions of entries in constant, small
// memory (docs/performance.md); the CLI's other work is small either way.
//
// Plain JavaScript, so that an old Node.js says plainly why it cannot run the CLI (whose
// commands are TypeScript in a checkout; the release package ships them compiled, bin/compile.js)
// instead of failing on the `.ts` extension. MIN_NODE is
// host/runtime.ts's (test/operations/runtime.test.ts keeps them equal).
const MIN_NODE = [22, 20];
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < MIN_NODE[0] || (major === MIN_NODE[0] && minor < MIN_NODE[1])) {
  process.stderr.write(
    `oncall: this is Node.js ${process.version} (${process.execPath}); the CLI needs ${MIN_NODE.join('.')} or newer.\n` +
      '  Run it as `npx oncall ...` from the service folder, which uses the Node.js 24 that\n' +
      '  `npm install` put in node_modules/.bin (see docs/install.md).\n',
  );
  process.exit(1);
}
const { execute } = await import('@oclif/core');
await execute({ dir: import.meta.url });
