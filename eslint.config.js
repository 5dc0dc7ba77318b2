// ESLint for the host, the CLI, plugins, packs, examples and tests (`npm run lint`, run by CI).
// Type-aware: typescript-eslint reads the project's tsconfig through the TypeScript 6 compiler
// API (bin/lint.ts points it there; the project's own tsc is TypeScript 7, which has none).
import tseslint from 'typescript-eslint';

const CLI_REPO = 'the CLI uses the services of the app the host builds (cli/context.ts), never a repo (docs/architecture.md)';

export default tseslint.config(
  { ignores: ['node_modules/**', 'web/**', 'data/**', 'test/artifacts/**', 'test/fixtures/plugins/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // A promise nobody awaits loses its error: the one class of bug a type checker cannot see.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // The plugin boundary: a plugin or pack sees the host only through the contract module
    // (host/plugins/contract.ts and what it re-exports), so a vendor can copy its folder alone.
    files: ['plugins/**/*.ts', 'packs/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)host/(?!plugins/contract\\.ts$)',
              message: 'plugins and packs import the host only through host/plugins/contract.ts',
            },
          ],
        },
      ],
    },
  },
  {
    // Each area owns its tables: another area imports its model (<area>.model.ts) or the small
    // service it offers, never its repo. Only host/app.ts, the composition root, builds repos of
    // every area (its imports start with ./, not ../).
    files: ['host/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^\\.\\./(\\.\\./)*[^/]+/[^/]+\\.repo\\.ts$',
              message: "an area imports another area's model or service, never its repo (docs/architecture.md)",
            },
          ],
        },
      ],
    },
  },
  {
    // The CLI builds no service of its own: it takes them from the app the host builds
    // (createApp without serving, cli/context.ts), so it imports no repo, statically or in run().
    files: ['cli/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '\\.repo\\.ts$', message: CLI_REPO }] }],
      'no-restricted-syntax': ['error', { selector: 'ImportExpression[source.value=/\\.repo\\.ts$/]', message: CLI_REPO }],
    },
  },
  {
    // Tests read loosely typed JSON answers (`res.body.x`) on purpose.
    files: ['test/**/*.ts', 'examples/*/test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
