// The console's answer types are the server's (host/api-types.ts, docs/console.md): the module
// is type-only, so the console's build never loads host code, and the console declares no answer
// type of its own beside it, so none can drift from the server again.
import test from 'ava';
import { readFileSync } from 'node:fs';

const REPO = new URL('../../', import.meta.url);
const read = (p: string) => readFileSync(new URL(p, REPO), 'utf8');

/** The type names a module exports (`export type X`, `export interface X`, `export type { X, Y }`). */
function exportedTypes(text: string): string[] {
  const names = [...text.matchAll(/^export (?:type|interface) (\w+)/gm)].map((m) => m[1]!);
  for (const m of text.matchAll(/^export type \{([^}]*)\}/gm))
    names.push(
      ...m[1]!
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    );
  return names;
}

test('host/api-types.ts is type-only: imported, it gives no value, and it imports nothing as a value', async (t) => {
  t.deepEqual(Object.keys(await import('../../host/api-types.ts')), []);
  const text = read('host/api-types.ts');
  t.deepEqual(
    text.split('\n').filter((l) => /^(import|export) /.test(l) && !/^(import|export) type\b/.test(l) && !/^export (interface|type) /.test(l)),
    [],
  );
});

test('web/src/lib/api.ts takes every answer type from host/api-types.ts and declares none of them itself', (t) => {
  const answers = exportedTypes(read('host/api-types.ts'));
  t.true(answers.length > 70, `${answers.length} answer types`);
  for (const name of ['Status', 'Me', 'EpisodeDetail', 'Rehearsal', 'Approval', 'Keychain', 'Study']) t.true(answers.includes(name), name);
  const console = read('web/src/lib/api.ts');
  t.true(console.includes("export type * from '../../../host/api-types.ts';"));
  t.deepEqual(
    exportedTypes(console).filter((n) => answers.includes(n)),
    [],
  );
});
