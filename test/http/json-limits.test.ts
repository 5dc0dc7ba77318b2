import test from 'ava';
import { checkJsonValue, findProblem, MAX_JSON_DEPTH } from '../../host/json-limits.ts';

const LONE = 'is not well-formed Unicode (a lone surrogate)';

/** `levels` objects nested under the key `k`, a string at the bottom. */
function nested(levels: number): unknown {
  let v: unknown = 'bottom';
  for (let i = 0; i < levels; i++) v = { k: v };
  return v;
}

test('a value the service can store has no problem, whatever its shape', (t) => {
  t.is(findProblem({ a: [1, 'two', null, true, { b: ['ü', '𝄞'] }], '': {}, c: [] }), null);
  t.is(findProblem('plain'), null);
  t.is(findProblem(nested(MAX_JSON_DEPTH)), null);
});

test('each kind of problem is named with the path to it', (t) => {
  t.deepEqual(findProblem({ a: { b: ['x', 'y\uD800'] } }), { path: 'a.b.1', message: LONE });
  t.deepEqual(findProblem({ a: { 'k\uDC00': 1 } }), { path: 'a.k\uFFFD', message: 'the key is not well-formed Unicode (a lone surrogate)' });
  t.deepEqual(findProblem(JSON.parse('{"a":[{"__proto__":{"x":1}}]}')), { path: 'a.0.__proto__', message: 'a key named __proto__ is not accepted' });
  t.deepEqual(findProblem(nested(MAX_JSON_DEPTH + 1)), {
    path: Array(MAX_JSON_DEPTH).fill('k').join('.'),
    message: `nests deeper than ${MAX_JSON_DEPTH} levels`,
  });
  t.deepEqual(findProblem('\uDBFF'), { path: '', message: LONE });
});

test('with several problems, the one named is the first the walk meets: the last key or element first, an object’s keys before its values', (t) => {
  t.is(findProblem({ a: '\uD800', b: { c: '\uD800' } })?.path, 'b.c');
  t.is(findProblem(['\uD800', 'ok', { a: '\uD800' }])?.path, '2.a');
  t.is(findProblem({ a: { b: '\uD800' }, 'z\uD800': 1 })?.path, 'z\uFFFD');
  t.is(
    findProblem({ a: '\uD800', b: nested(MAX_JSON_DEPTH) })?.path,
    `b.${Array(MAX_JSON_DEPTH - 1)
      .fill('k')
      .join('.')}`,
  );
});

test('an empty key is an empty segment of the path, and nothing at its start (as it always was)', (t) => {
  t.is(findProblem({ '': { a: '\uD800' } })?.path, 'a');
  t.is(findProblem({ x: { '': ['\uD800'] } })?.path, 'x..0');
});

test('no nesting exhausts the stack: 100,000 levels are refused at the limit', (t) => {
  const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) as unknown;
  t.is(findProblem(deep)?.message, `nests deeper than ${MAX_JSON_DEPTH} levels`);
  const err = t.throws(() => checkJsonValue(deep, 'body'));
  t.like(err, { code: 'invalid_body', status: 400 });
  t.regex(err.message, /^body\.0\.0\./);
});
