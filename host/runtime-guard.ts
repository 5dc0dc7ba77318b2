import { runtimeProblem } from './runtime.ts';

// Imported first by host/main.ts: on a Node.js that can strip types but is older than the
// floor (22.18, 22.19), stop with a plain message. Node 20 cannot read this file at all; it
// fails on the `.ts` extension before any of our code runs (docs/install.md says what that means).
const problem = runtimeProblem();
if (problem !== null) {
  process.stderr.write(`Cannot start: ${problem}\n`);
  process.exit(1);
}
