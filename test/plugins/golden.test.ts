import test from 'ava';
import { canonicalJson, entryHash, entryText, GENESIS_HASH } from '../../host/ledger/entry.ts';
import { hashFingerprint } from '../../host/intake/normalise.ts';

// Fixed vectors, worked out once outside this code base (sha256 of the documented text) and
// written here: a change to the hashing that the implementation's own round trips would not
// notice (another canonical form, another domain tag, a key order) fails these.

test('ledger hash: golden vectors for a two-entry chain', (t) => {
  const first = entryText(
    {
      at: '2026-01-01T00:00:00.000Z',
      type: 'human.deploy',
      actor: 'ci',
      reason: 'deployed v2',
      data: canonicalJson({ b: [true, null, 'x'], a: 1 }),
      trace: null,
    },
    1,
  );
  t.is(
    first,
    '{"actor":"ci","at":"2026-01-01T00:00:00.000Z","data":{"a":1,"b":[true,null,"x"]},"reason":"deployed v2","seq":1,"trace":null,"type":"human.deploy"}',
  );
  const h1 = entryHash(GENESIS_HASH, first);
  t.is(h1, '5ecf4ecedb25edc3fafcde8a28b22d6478b888e064d2cf6f0a88cfbba2fc6488');
  const second = entryText({ at: '2026-01-01T00:00:01.000Z', type: 'system.x', actor: 'system', reason: '', data: '{}', trace: 'ep_1' }, 2);
  t.is(entryHash(h1, second), '3ba01e6d591504f709f6f54b0542673e6a2f74df3e1fcd2b704ec6b2a0743e90');
});

test('fingerprint: golden vectors with and without a service', (t) => {
  t.is(hashFingerprint('alertmanager', 'HighLatency', { job: 'api', instance: 'a:9100' }, 'payments'), '9e159816009d58771c3bbd2283830b9f');
  t.is(hashFingerprint('alertmanager', 'HighLatency', { job: 'api' }), '9d0d380d3689707cb6d78f7ec81b302d');
});
