// ava's configuration (was package.json's "ava"). `npm test` runs every test file; with
// TEST_DATABASE_URL set (the suite again on MySQL/MariaDB) it leaves out the files listed in
// test/engine-independent.json: they open no store of the pass's engine (no database at all, or a
// MariaDB of their own whatever the pass), so they would only run again exactly as they ran on
// SQLite. test/helpers/db.ts refuses a store to a listed file, so the list cannot hide a test
// that depends on the engine.
import { readFileSync } from 'node:fs';

const independent = JSON.parse(readFileSync(new URL('./test/engine-independent.json', import.meta.url), 'utf8')).files;
const onMysql = (process.env.TEST_DATABASE_URL ?? '').trim() !== '';

export default {
  files: [
    'test/**/*.test.ts',
    'examples/*/test/**/*.test.ts',
    'plugins/*/*/test/**/*.test.ts',
    'packs/*/test/**/*.test.ts',
    ...(onMysql ? independent.map((f) => `!${f}`) : []),
  ],
  extensions: { ts: 'module' },
  timeout: '2m',
  workerThreads: false,
};
