/**
 * Runs svelte-check (`npm run typecheck`) on the console. svelte-check needs the TypeScript 5/6
 * compiler API, which TypeScript 7 (the project's `tsc`, a native compiler) no longer has; so
 * TypeScript 6 is installed beside it as `typescript6` (package.json), and this wrapper sends
 * every `typescript` import of this process there before starting svelte-check.
 */
import { createRequire, registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';

registerHooks({
  resolve(specifier, context, next) {
    if (specifier === 'typescript' || specifier.startsWith('typescript/')) return next(`typescript6${specifier.slice('typescript'.length)}`, context);
    return next(specifier, context);
  },
});

const root = fileURLToPath(new URL('..', import.meta.url));
process.argv = [
  process.argv[0]!,
  'svelte-check',
  '--workspace',
  `${root}web`,
  '--tsconfig',
  `${root}web/tsconfig.json`,
  '--fail-on-warnings',
  ...process.argv.slice(2),
];
createRequire(import.meta.url)(`${root}node_modules/svelte-check/bin/svelte-check`);
