/**
 * `npm run lint`: ESLint over the repository (eslint.config.js). typescript-eslint needs the
 * TypeScript 5/6 compiler API, which TypeScript 7 (the project's `tsc`) no longer has; as for
 * svelte-check (web/svelte-check.ts), every `typescript` import of this process goes to
 * `typescript6` (package.json). Exit 1 on any error or warning.
 */
import { registerHooks } from 'node:module';

registerHooks({
  resolve(specifier, context, next) {
    if (specifier === 'typescript' || specifier.startsWith('typescript/')) return next(`typescript6${specifier.slice('typescript'.length)}`, context);
    return next(specifier, context);
  },
});

const { ESLint } = await import('eslint');
const eslint = new ESLint({ cwd: new URL('..', import.meta.url).pathname });
const results = await eslint.lintFiles(process.argv.length > 2 ? process.argv.slice(2) : ['.']);
const formatter = await eslint.loadFormatter('stylish');
const text = await formatter.format(results);
if (text !== '') process.stdout.write(text);
const problems = results.reduce((n, r) => n + r.errorCount + r.warningCount, 0);
process.exit(problems === 0 ? 0 : 1);
