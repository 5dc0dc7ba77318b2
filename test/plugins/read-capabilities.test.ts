// Read capabilities a connector declares in its manifest (plugin API 1.5, issue 26): a vendor's
// connector adds `tickets`, a vendor's pack reads it with ctx.read, and the host routes and guards
// the reads (the request and answer schemas, the pack's own declarations, secrets, the size cap)
// without knowing what a ticket is. A pack naming a capability nothing offers is broken.
import test from 'ava';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SECOND } from '../../host/clock.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';

const SECRET = 'tickets-secret-7d1e0c';

const CONNECTOR = {
  manifest: {
    name: 'tickets',
    version: '1.0.0',
    kind: 'connector',
    api: '^1.5.0',
    entry: 'index.mjs',
    settings: {
      type: 'object',
      additionalProperties: false,
      required: ['token'],
      properties: { token: { type: 'string', writeOnly: true, description: 'secret' } },
    },
    reads: {
      tickets: {
        description: 'Open tickets of a named queue the pack declares.',
        request: { type: 'object', additionalProperties: false, required: ['name'], properties: { name: { type: 'string' } } },
        answer: { type: 'object', required: ['tickets'], properties: { tickets: { type: 'array', items: { type: 'string' } } } },
        named: { type: 'object', additionalProperties: false, required: ['queue'], properties: { queue: { type: 'string' } } },
      },
    },
  },
  code: `
export default {
  test: (ctx) => ({ ok: true, problem: null, found: { may_read: Object.keys(ctx.named?.tickets ?? {}).sort() } }),
  read: (ctx, r) => {
    globalThis.__ticketReads = [...(globalThis.__ticketReads ?? []), r];
    const q = r.declared.value.queue;
    if (q === 'garbage') return { ok: true, problem: null, answer: { tickets: 'not a list' } };
    if (q === 'huge') return { ok: true, problem: null, answer: { tickets: ['x'.repeat(2 * 1024 * 1024)] } };
    return { ok: true, problem: null, answer: { tickets: ['T-1 in ' + q, 'token ' + ctx.settings.token] }, shown: 'open tickets of ' + q };
  },
};`,
};

const PACK = `
const cause = (name, check, more = {}) => ({ id: 'tk/' + name, title: 'Tickets ' + name, specificity: 40, applies: { always: true }, reads: ['tickets'], check, ...more });
const read = (request) => async (ctx) => {
  const r = await ctx.read('tickets', request);
  return { verdict: 'holds', reason: r.answer.tickets.join('; '), evidence: [{ source: r.source, kind: 'tickets', query: r.query, at: r.at, observed: r.answer, excerpt: 'read' }] };
};
export default {
  named: { tickets: { open: { queue: 'payments' }, garbage: { queue: 'garbage' }, huge: { queue: 'huge' }, wrong: { lane: 'x' } } },
  causes: [
    cause('reads', read({ name: 'open' })),
    cause('undeclared', read({ name: 'made-up' })),
    cause('bad-request', read({ name: 'open', sql: 'DROP TABLE x' })),
    cause('bad-answer', read({ name: 'garbage' })),
    cause('huge', read({ name: 'huge' })),
    cause('wrong-declaration', read({ name: 'wrong' })),
    cause('sneaky', read({ name: 'open' }), { reads: [] }),
  ],
};`;

function vendorDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-reads-'));
  const put = (name: string, manifest: unknown, code: string) => {
    mkdirSync(path.join(dir, name));
    writeFileSync(path.join(dir, name, 'plugin.json'), JSON.stringify(manifest));
    writeFileSync(path.join(dir, name, 'index.mjs'), code);
  };
  put('tickets', CONNECTOR.manifest, CONNECTOR.code);
  put('tk', { name: 'tk', version: '1.0.0', kind: 'pack', api: '^1.5.0', entry: 'index.mjs' }, PACK);
  put(
    'tk-typo',
    { name: 'tk-typo', version: '1.0.0', kind: 'pack', api: '^1.5.0', entry: 'index.mjs' },
    `export default { causes: [{ id: 'tk-typo/x', title: 'X', specificity: 5, applies: { always: true }, reads: ['tikets'], check: () => null }] };`,
  );
  return dir;
}

async function started(t: Parameters<typeof startApp>[0]): Promise<TestApp> {
  const dir = vendorDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ta = await startApp(t, { env: { SERVICE_PLUGINS_DIR: dir }, investigationLimits: { checkTimeoutMs: 5000 } });
  await makeOperating(ta);
  return ta;
}

test('a capability a vendor connector declares is read by a vendor pack through ctx.read, guarded by the host without knowing it', async (t) => {
  const ta = await started(t);
  const catalogue = (await ta.call('GET', '/v1/connectors/catalogue')).body;
  const kind = (catalogue.kinds ?? catalogue).find((k: any) => k.kind === 'tickets');
  t.deepEqual(Object.keys(kind.reads), ['tickets'], 'the catalogue shows the capability the manifest declares');

  const tested = await ta.call('POST', '/v1/connectors/test', { body: { kind: 'tickets', settings: { token: SECRET } } });
  t.deepEqual(tested.body.found, { may_read: ['tk/garbage', 'tk/huge', 'tk/open', 'tk/wrong'] }, "the connector's test is handed the packs' declarations");
  t.is((await ta.call('PUT', '/v1/connectors/desk', { body: { kind: 'tickets', settings: { token: SECRET } } })).status, 201);
  const unlinked = await ta.call('POST', '/v1/checks/run', { body: { service: 'pay', cause: 'tk/reads' } });
  t.like(
    unlinked.body.verdicts[0],
    { verdict: 'unknown', obstacle: 'nothing connected can read it' },
    'the one connector configured is not read unless linked',
  );
  t.regex(unlinked.body.verdicts[0].reason, /the estate links no connector that reads tickets to pay \(desk reads it\)/);
  const linked = await ta.call('PUT', '/v1/estate/overrides', {
    body: { services: { pay: { links: [{ kind: 'database', name: 'payments-tickets', connector: 'desk' }] } } },
  });
  t.is(linked.status, 200, JSON.stringify(linked.body));

  t.is(
    (
      await ta.call('POST', '/v1/alerts/generic', {
        token: INGEST_TOKEN,
        body: { alerts: [{ name: 'Queue', service: 'pay', severity: 'critical', status: 'firing', id: 'q1' }] },
      })
    ).status,
    202,
  );
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  await ta.app.investigation.investigations.run();
  const list = (await ta.call('GET', '/v1/episodes?query=service:pay')).body.episodes as any[];
  const ep = (await ta.call('GET', `/v1/episodes/${list[0].id}`)).body;
  const v = (id: string) => ep.verdicts.find((x: any) => x.cause === id);

  t.is(v('tk/reads').verdict, 'holds', v('tk/reads').reason);
  t.regex(v('tk/reads').reason, /T-1 in payments/, "the connector ran the pack's declaration");
  t.false(JSON.stringify(ep).includes(SECRET), "the connector's secret is blanked out of what the check kept");
  const item = ep.evidence.find((e: any) => e.id === v('tk/reads').evidence[0]);
  t.like(item, { source: 'desk', query: 'open tickets of payments' });

  const unknown = (id: string, words: RegExp) => {
    t.is(v(id).verdict, 'unknown', id);
    t.regex(v(id).reason, words, id);
  };
  unknown('tk/undeclared', /pack tk declares no tickets named "made-up"/);
  unknown('tk/bad-request', /the check asked tickets something its declaration does not allow: request: unknown field sql/);
  unknown('tk/bad-answer', /answered something its tickets declaration does not allow/);
  unknown('tk/huge', /larger than 1024 KiB/);
  unknown('tk/wrong-declaration', /the declaration tk\/wrong of tickets is not one this connector takes/);
  unknown('tk/sneaky', /does not declare that it reads tickets/);
  // The host runs in this process: what the connector was handed is visible here.
  const reads = (globalThis as { __ticketReads?: Array<{ request: Record<string, unknown>; declared: { pack: string } }> }).__ticketReads ?? [];
  t.true(reads.length >= 3);
  t.true(
    reads.every((r) => r.declared.pack === 'tk' && !('sql' in r.request)),
    'a refused request never reaches the connector',
  );

  const packs = (await ta.call('GET', '/v1/packs')).body.packs as any[];
  const typo = packs.find((p) => p.name === 'tk-typo');
  t.is(typo.state, 'broken');
  t.regex(typo.problem, /cause tk-typo\/x: reads names "tikets"; capabilities are .*tickets/);
  t.deepEqual(packs.find((p) => p.name === 'tk').causes.find((c: any) => c.id === 'tk/reads').reads, ['tickets']);
});

test('a cause reading a declared capability no configured connector serves is unknown without running, as for metrics', async (t) => {
  const ta = await started(t);
  const run = await ta.call('POST', '/v1/checks/run', { body: { service: 'pay', cause: 'tk/reads' } });
  t.is(run.status, 200, JSON.stringify(run.body));
  const verdict = run.body.verdicts[0];
  t.like(verdict, { verdict: 'unknown', obstacle: 'nothing connected can read it' });
  t.regex(verdict.reason, /no connector reads tickets: add one \(a kind that declares tickets\)/);
});
