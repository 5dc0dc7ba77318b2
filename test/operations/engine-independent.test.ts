// The MariaDB pass leaves out the files of test/engine-independent.json (ava.config.js): this
// checks that the list holds only such files and that the config leaves them out there only.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import test from 'ava';
import { refuseIfEngineIndependent } from '../helpers/db.ts';

const listed = (JSON.parse(readFileSync('test/engine-independent.json', 'utf8')) as { files: string[] }).files;

/** ava's `files` as ava.config.js gives them under `env`. */
function avaFiles(env: Record<string, string>): string[] {
  const r = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', "const c = (await import('./ava.config.js')).default; console.log(JSON.stringify(c.files))"],
    {
      env: { ...process.env, TEST_DATABASE_URL: '', ...env },
      encoding: 'utf8',
    },
  );
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as string[];
}

test('every listed file is a test file of the suite, listed once, and reads neither the pass’s engine nor its database URL', (t) => {
  t.true(listed.length > 0);
  t.is(new Set(listed).size, listed.length, 'listed once');
  for (const f of listed) {
    t.true(existsSync(f) && f.endsWith('.test.ts'), f);
    const src = readFileSync(f, 'utf8');
    t.false(/\bENGINE\b(?!=)|TEST_DATABASE_URL|createTestStore/.test(src), `${f} depends on the pass's engine`);
  }
});

test('a listed file is refused a store of the pass’s engine; any other file gets one', (t) => {
  const e = t.throws(() => refuseIfEngineIndependent(listed[0]));
  t.regex(e.message, /test\/engine-independent\.json lists it/);
  t.notThrows(() => refuseIfEngineIndependent('test/ledger/ledger.test.ts'));
});

test('ava.config.js leaves the listed files out only when TEST_DATABASE_URL is set', (t) => {
  const onSqlite = avaFiles({});
  const onMysql = avaFiles({ TEST_DATABASE_URL: 'mysql://root@127.0.0.1:3306' });
  t.false(
    onSqlite.some((g) => g.startsWith('!')),
    'the SQLite pass runs every file',
  );
  t.deepEqual(
    onMysql.filter((g) => g.startsWith('!')).map((g) => g.slice(1)),
    listed,
  );
  t.deepEqual(
    onMysql.filter((g) => !g.startsWith('!')),
    onSqlite,
  );
});
