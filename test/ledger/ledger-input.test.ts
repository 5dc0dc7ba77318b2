import test from 'ava';
import { MAX_JSON_DEPTH } from '../../host/json-limits.ts';
import { redactSecrets } from '../../host/ledger/redact.ts';
import { clip } from '../../host/text.ts';
import { ADMIN_TOKEN, INGEST_TOKEN, makeOperating, startApp } from '../helpers/app.ts';

/** `{"k":{"k":...{"leaf": value}}}` with `levels` objects in all. */
function nested(levels: number, leaf: Record<string, unknown>): Record<string, unknown> {
  let v: Record<string, unknown> = leaf;
  for (let i = 1; i < levels; i++) v = { k: v };
  return v;
}

test('a lone surrogate in reason, actor, type or data of POST /v1/events is 400 and the ledger still verifies', async (t) => {
  const ta = await startApp(t);
  const bodies = [
    '{"type":"human.x","actor":"a","reason":"x\\ud800y"}',
    '{"type":"human.x","actor":"x\\udfffy"}',
    '{"type":"human.x","actor":"a","data":{"note":"\\ud800"}}',
    '{"type":"human.x","actor":"a","data":{"\\ud800":"key"}}',
    '{"type":"human.x","actor":"a","trace":"\\ud800"}',
  ];
  for (const body of bodies) {
    const res = await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body });
    t.is(res.status, 400, body);
    t.is(res.body.error, 'invalid_body');
    t.regex(res.body.message, /well-formed/);
  }
  // A well-formed pair of surrogates (an emoji) is fine and verifies.
  t.is((await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body: '{"type":"human.x","actor":"a","reason":"ok \\ud83d\\ude00"}' })).status, 201);
  const verify = await ta.call('GET', '/v1/ledger/verify');
  t.true(verify.body.ok, JSON.stringify(verify.body));
  t.is(verify.body.checked, 1);
});

test('a lone surrogate in the reason of POST /v1/halt is 400 and nothing is halted', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const res = await ta.call('POST', '/v1/halt', { body: '{"by":"ops@bank.example","reason":"stop \\ud800"}' });
  t.is(res.status, 400);
  t.false((await ta.call('GET', '/v1/autonomy')).body.halted);
  t.true((await ta.call('GET', '/v1/ledger/verify')).body.ok);
});

test('the ledger itself refuses to hash what it cannot store byte for byte, whoever appends', async (t) => {
  const ta = await startApp(t);
  await t.throwsAsync(ta.app.ledger.append({ type: 'system.x', actor: 'system', reason: 'bad \ud800' }), { message: /well-formed/ });
  await t.throwsAsync(ta.app.ledger.append({ type: 'system.x', actor: 'system', data: { a: ['\udc00'] } }), { message: /data\.a\.0/ });
  await t.throwsAsync(
    ta.app.ledger.transact((_trx, record) => record({ type: 'system.x', actor: 'sys\ud800' })),
    { message: /actor/ },
  );
  t.is((await ta.app.ledger.head()).seq, 0);
});

test('characters that are well-formed but unusual are stored and read back byte for byte, and verify', async (t) => {
  const ta = await startApp(t);
  const odd = 'nul\u0000 bom\ufeff rtl\u202e astral\u{1f600} nonchar\uffff comb e\u0301 max\u{10ffff}';
  // A caller's actor may hold no control or invisible character (it would hide what it names); the rest may.
  t.is((await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body: { type: 'human.x', actor: odd } })).body.error, 'reserved_actor');
  const actor = 'astral\u{1f600} comb e\u0301 max\u{10ffff}';
  const res = await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body: { type: 'human.x', actor, reason: odd, data: { [odd]: odd } } });
  t.is(res.status, 201);
  const page = await ta.call('GET', '/v1/ledger?type=human.');
  const e = page.body.events[0];
  t.is(e.actor, actor);
  t.is(e.reason, odd);
  t.deepEqual(e.data, { [odd]: odd, recorded_by: 'ingest-token' });
  t.true((await ta.call('GET', '/v1/ledger/verify')).body.ok);
});

test(`JSON bodies nest at most ${MAX_JSON_DEPTH} levels: one more is 400 naming the limit, and every stored page stays readable`, async (t) => {
  const ta = await startApp(t);
  // The body is level 1 and data level 2, so data may hold 30 more levels.
  const fits = { type: 'human.x', actor: 'a', data: nested(MAX_JSON_DEPTH - 1, { leaf: 1 }) };
  const over = { type: 'human.x', actor: 'a', data: nested(MAX_JSON_DEPTH, { leaf: 1 }) };
  t.is((await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body: fits })).status, 201);
  const res = await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body: over });
  t.is(res.status, 400);
  t.regex(res.body.message, new RegExp(`deeper than ${MAX_JSON_DEPTH}`));
  const deep = await ta.call('POST', '/v1/events', {
    token: INGEST_TOKEN,
    body: `{"type":"human.x","actor":"a","data":{"d":${'['.repeat(10_000)}${']'.repeat(10_000)}}}`,
  });
  t.is(deep.status, 400);
  const page = await ta.call('GET', '/v1/ledger');
  t.is(page.status, 200);
  t.is(page.body.events.length, 1);
  t.true((await ta.call('GET', '/v1/ledger/verify')).body.ok);
});

test('redaction reaches every level that can be stored: a password at the deepest level is blanked', async (t) => {
  const ta = await startApp(t);
  const body = { type: 'human.x', actor: 'a', data: nested(MAX_JSON_DEPTH - 1, { password: 'hunter2-secret', api_key: 'k-secret' }) };
  t.is((await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body })).status, 201);
  const text = JSON.stringify((await ta.call('GET', '/v1/ledger')).body);
  t.false(text.includes('hunter2-secret'));
  t.false(text.includes('k-secret'));
  t.true(text.includes('[redacted]'));
});

test('a __proto__ key is refused with 400 rather than silently dropped', async (t) => {
  const ta = await startApp(t);
  const res = await ta.call('POST', '/v1/events', {
    token: INGEST_TOKEN,
    body: '{"type":"human.x","actor":"a","data":{"__proto__":{"polluted":true},"kept":1}}',
  });
  t.is(res.status, 400);
  t.regex(res.body.message, /__proto__/);
  t.is((await ta.app.ledger.head()).seq, 0);
  t.is(({} as Record<string, unknown>).polluted, undefined);
});

test('connector settings nested 10,000 deep are 400, not 500', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const settings = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
  for (const [method, path] of [
    ['PUT', '/v1/connectors/deep'],
    ['POST', '/v1/connectors/test'],
  ] as const) {
    const res = await ta.call(method, path, { token: ADMIN_TOKEN, body: `{"kind":"http","settings":${settings}}` });
    t.is(res.status, 400, path);
  }
  t.true((await ta.call('GET', '/v1/ledger/verify')).body.ok);
});

test('redaction blanks a secret at any depth it is handed, even past what the ledger stores', (t) => {
  const deep = redactSecrets(nested(MAX_JSON_DEPTH + 8, { password: 'hunter2-secret' }));
  t.false(JSON.stringify(deep).includes('hunter2-secret'));
});

test('clipping never leaves half of a surrogate pair: an alert whose long name and summary end mid-emoji is taken, grouped and verifies', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const name = `${'n'.repeat(499)}\u{1f525}tail`; // the pair sits at 499-500, across the 500 clip
  const summary = `${'s'.repeat(999)}\u{1f525}tail`; // across the episode note's 1000
  const res = await ta.call('POST', '/v1/alerts/generic', {
    token: INGEST_TOKEN,
    body: { name, summary, severity: 'critical', status: 'firing', service: 'payments' },
  });
  t.is(res.status, 202, JSON.stringify(res.body));
  t.is(res.body.signals[0].name, 'n'.repeat(499));
  ta.clock.advance(60_000);
  await ta.app.episodes.process();
  const episodes = await ta.call('GET', '/v1/episodes');
  t.is(episodes.body.episodes.length, 1);
  t.true((await ta.call('GET', '/v1/ledger/verify')).body.ok);
});

test('clip cuts whole characters and repairs lone surrogates it is handed', (t) => {
  t.is(clip('ab\u{1f525}', 3), 'ab');
  t.is(clip('ab\u{1f525}', 4), 'ab\u{1f525}');
  t.is(clip('a\ud800b', 10), 'a\ufffdb');
  t.is(clip('abcdef', 3, '…'), 'abc…');
});
