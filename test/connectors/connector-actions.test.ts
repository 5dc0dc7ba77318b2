// The host side of connector actions (host/connectors/connector-actions.ts): what the acting area
// calls. A vendor's connector written in the test declares actions and misbehaves on request;
// every failure must come back as a report (never a throw), scrubbed of the connector's secret.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { actionHost, actionRequest, type ActionHost } from '../helpers/connector-actions.ts';

const SECRET = 'acme-SECRET-77f0c1d2e3';

const SETTINGS = {
  type: 'object',
  additionalProperties: false,
  properties: { timeout_s: { type: 'number' }, secret: { type: 'string', writeOnly: true } },
};

const POKE_PARAMS = {
  type: 'object',
  additionalProperties: false,
  required: ['target'],
  properties: {
    target: { type: 'string', pattern: '^[a-z]+$' },
    mode: { enum: ['ok', 'said_no', 'throw', 'hang', 'garbage', 'big_undo', 'leak'] },
  },
};

/** Every call the vendor plugin received, in order (the plugin runs in this process). */
const calls = (): Array<{ call: string; kind: string; params: Record<string, unknown>; key: string; undo?: unknown }> =>
  ((globalThis as Record<string, unknown>).acmeCalls ??= []) as never;

const ACME = `
const record = (call, a) => ((globalThis.acmeCalls ??= []).push({ call, kind: a.kind, params: a.params, key: a.key, undo: a.undo }));
function answer(ctx, call, a) {
  record(call, a);
  const s = ctx.settings.secret;
  switch (a.params.mode ?? 'ok') {
    case 'said_no': return { ok: false, problem: 'the acme API said no to ' + a.params.target + ' with ' + s };
    case 'throw': throw new Error('exploded holding ' + s + '\\nsecond line');
    case 'hang': return new Promise(() => {});
    case 'garbage': return 'done, honestly';
    case 'big_undo': return { ok: true, problem: null, shown: 'poked', undo: { blob: 'x'.repeat(10000) } };
    case 'leak':
      ctx.log.warn('my secret is ' + s, { s });
      return { ok: true, problem: null, shown: 'poked with ' + s, undo: { id: 'p-1', token: s } };
    default: return { ok: true, problem: null, shown: call + ' ' + a.params.target + ' for ' + a.episode.id, undo: call === 'act' ? { id: 'p-1' } : undefined };
  }
}
export default {
  test: () => ({ ok: true, problem: null }),
  rehearse: (ctx, a) => answer(ctx, 'rehearse', a),
  act: (ctx, a) => answer(ctx, 'act', a),
  undo: (ctx, a) => answer(ctx, 'undo', a),
};
`;

/** Declares rehearsable and reversible, but has only act(): the host must not believe the manifest. */
const MUTE = `export default { test: () => ({ ok: true, problem: null }), act: () => ({ ok: true, problem: null }) };\n`;

function vendorPlugins(t: ExecutionContext): string {
  const root = mkdtempSync(path.join(tmpdir(), 'oncall-act-plugins-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const put = (name: string, manifest: Record<string, unknown>, code: string) => {
    mkdirSync(path.join(root, name));
    writeFileSync(
      path.join(root, name, 'plugin.json'),
      JSON.stringify({ name, version: '1.0.0', kind: 'connector', api: '^1.2.0', entry: 'index.mjs', settings: SETTINGS, ...manifest }),
    );
    writeFileSync(path.join(root, name, 'index.mjs'), code);
  };
  put(
    'acme',
    {
      actions: {
        poke: { description: 'Pokes a target.', params: POKE_PARAMS, rehearsable: true, reversible: true },
        shout: { description: 'Shouts; cannot be taken back.', params: { type: 'object' }, rehearsable: false, reversible: false },
        broken: { description: 'Its params schema does not compile.', params: { type: 'nonsense' }, rehearsable: false, reversible: false },
      },
    },
    ACME,
  );
  put('mute', { actions: { hush: { description: 'Hushes.', params: { type: 'object' }, rehearsable: true, reversible: true } } }, MUTE);
  put('plain', {}, MUTE);
  return root;
}

async function host(t: ExecutionContext, env: NodeJS.ProcessEnv = { ACME_SECRET: SECRET }): Promise<ActionHost> {
  return actionHost(
    t,
    {
      acme: { kind: 'acme', settings: { secret: { env: 'ACME_SECRET' } } },
      quick: { kind: 'acme', settings: { secret: { env: 'ACME_SECRET' }, timeout_s: 0.2 } },
      mute: { kind: 'mute', settings: {} },
      plain: { kind: 'plain', settings: {} },
    },
    { pluginDirs: [vendorPlugins(t)], env },
  );
}

const poke = (params: Record<string, unknown>, key?: string) => actionRequest('poke', params, key);

test.serial('actionKinds lists the connectors whose kind declares actions, trusting only what the plugin can do', async (t) => {
  const h = await host(t);
  const kinds = await h.connectors.actionKinds();
  t.deepEqual(
    kinds.map((k) => [k.name, k.kind, k.fault]),
    [
      ['acme', 'acme', null],
      ['mute', 'mute', null],
      ['quick', 'acme', null],
    ],
    'plain declares none and is left out; shipped kinds appear only when configured',
  );
  const acme = kinds[0]!.actions;
  t.deepEqual(Object.keys(acme), ['broken', 'poke', 'shout']);
  t.like(acme.poke, { rehearsable: true, reversible: true, problem: null, params: POKE_PARAMS });
  t.like(acme.shout, { rehearsable: false, reversible: false, problem: null });
  t.regex(acme.broken!.problem ?? '', /^the params schema of the action broken does not compile/);
  t.like(kinds[1]!.actions.hush, { rehearsable: false, reversible: false, problem: null }, 'declared, but there is no rehearse() or undo()');
  const catalogue = h.connectors.kinds.catalogue().find((c) => c.kind === 'acme')!;
  t.deepEqual(Object.keys(catalogue.actions), ['broken', 'poke', 'shout']);
  t.deepEqual(h.connectors.kinds.catalogue().find((c) => c.kind === 'plain')!.actions, {});
});

test.serial('rehearse, act and undo reach the plugin with the request; act answers what undo needs', async (t) => {
  const h = await host(t);
  const before = calls().length;
  const rehearsed = await h.connectors.rehearse('acme', poke({ target: 'db' }));
  t.like(rehearsed, { call: 'rehearse', kind: 'acme', ok: true, problem: null, reason: null, shown: 'rehearse db for ep-1', undo: null });
  const acted = await h.connectors.act('acme', poke({ target: 'db' }));
  t.like(acted, { call: 'act', ok: true, shown: 'act db for ep-1' });
  t.deepEqual(acted.undo, { id: 'p-1' });
  const undone = await h.connectors.undo('acme', { ...poke({ target: 'db' }), undo: acted.undo! });
  t.like(undone, { call: 'undo', ok: true, shown: 'undo db for ep-1', undo: null });
  t.deepEqual(
    calls()
      .slice(before)
      .map((c) => [c.call, c.kind, c.params.target, c.key, c.undo]),
    [
      ['rehearse', 'poke', 'db', 'ep-1/poke/1', undefined],
      ['act', 'poke', 'db', 'ep-1/poke/1', undefined],
      ['undo', 'poke', 'db', 'ep-1/poke/1', { id: 'p-1' }],
    ],
  );
  t.true(h.logs.some((l) => l.includes('act poke on connector acme: ok')));
});

test.serial('params that do not fit the declaration are refused before the plugin is called', async (t) => {
  const h = await host(t);
  const before = calls().length;
  for (const [params, problem] of [
    [{}, 'params.target is required'],
    [{ target: 'DB' }, 'params.target must match pattern "^[a-z]+$"'],
    [{ target: 'db', colour: 'red' }, 'params: unknown field colour'],
    [{ target: 'db', mode: 'loud' }, 'params.mode must be equal to one of the allowed values'],
  ] as const) {
    for (const call of ['rehearse', 'act'] as const) {
      const r = await h.connectors[call]('acme', poke(params));
      t.like(r, { ok: false, reason: 'invalid_params', problem }, `${call} ${JSON.stringify(params)}`);
    }
  }
  t.like(await h.connectors.act('acme', { ...poke({ target: 'db' }), params: 'db' as never }), {
    ok: false,
    reason: 'invalid_params',
    problem: 'params must be an object',
  });
  t.like(await h.connectors.undo('acme', { ...poke({ target: 'db' }), undo: null as never }), { ok: false, reason: 'invalid_params' });
  t.is(calls().length, before, 'the plugin was never called');
});

test.serial('an action the kind does not declare, cannot rehearse or cannot undo is not_declared; a missing or faulty connector unusable', async (t) => {
  const h = await host(t);
  const before = calls().length;
  t.like(await h.connectors.act('acme', actionRequest('revert', { sha: 'x' })), {
    ok: false,
    reason: 'not_declared',
    problem: 'connectors of kind acme do not perform revert',
  });
  t.like(await h.connectors.rehearse('acme', actionRequest('shout', {})), {
    ok: false,
    reason: 'not_declared',
    problem: 'shout on connectors of kind acme cannot be rehearsed',
  });
  t.like(await h.connectors.undo('acme', { ...actionRequest('shout', {}), undo: {} }), {
    ok: false,
    reason: 'not_declared',
    problem: 'shout on connectors of kind acme cannot be undone',
  });
  t.like(await h.connectors.act('acme', actionRequest('broken', {})), { ok: false, reason: 'not_declared' });
  t.like(await h.connectors.rehearse('mute', actionRequest('hush', {})), { ok: false, reason: 'not_declared' }, 'declared rehearsable, but no rehearse()');
  t.like(await h.connectors.act('mute', actionRequest('hush', {})), { ok: true, reason: null });
  t.like(await h.connectors.act('nowhere', poke({ target: 'db' })), {
    kind: null,
    ok: false,
    reason: 'unusable',
    problem: 'no connector named nowhere is configured',
  });
  t.is(calls().length, before);

  const unset = await host(t, {});
  t.like(await unset.connectors.act('acme', poke({ target: 'db' })), {
    kind: 'acme',
    ok: false,
    reason: 'unusable',
    problem: 'connectors.json: settings.secret: environment variable ACME_SECRET is not set',
  });
  t.is(calls().length, before, 'a connector with a fault is never called');
});

test.serial('a plugin that says no, throws, hangs or answers garbage is a report, scrubbed of its secret', async (t) => {
  const h = await host(t);
  t.like(await h.connectors.act('acme', poke({ target: 'db', mode: 'said_no' })), {
    ok: false,
    reason: 'said_no',
    problem: 'the acme API said no to db with [redacted]',
  });
  t.like(await h.connectors.act('acme', poke({ target: 'db', mode: 'throw' })), {
    ok: false,
    reason: 'threw',
    problem: 'the action failed: exploded holding [redacted]',
  });
  t.like(await h.connectors.rehearse('acme', poke({ target: 'db', mode: 'throw' })), {
    reason: 'threw',
    problem: 'the rehearsal failed: exploded holding [redacted]',
  });
  t.like(await h.connectors.act('acme', poke({ target: 'db', mode: 'garbage' })), {
    ok: false,
    reason: 'bad_answer',
    problem: 'the action answered something that is not {ok, problem}',
  });
  const started = Date.now();
  const hung = await h.connectors.act('quick', poke({ target: 'db', mode: 'hang' }));
  t.like(hung, { ok: false, reason: 'cut_off', problem: 'no answer within 1.2 s (cut off)' });
  t.true(Date.now() - started < 5000, 'cut off at timeout_s + 1 s');
  const leaky = await h.connectors.act('acme', poke({ target: 'db', mode: 'leak' }));
  t.like(leaky, { ok: true, shown: 'poked with [redacted]' });
  t.deepEqual(leaky.undo, { id: 'p-1', token: '[redacted]' });
  t.false(h.logs.join('\n').includes(SECRET), 'the plugin logged its secret: the host blanked it');
});

test.serial('an act that succeeded stays a success when its undo is too large to keep', async (t) => {
  const h = await host(t);
  const r = await h.connectors.act('acme', poke({ target: 'db', mode: 'big_undo' }));
  t.like(r, { ok: true, reason: null, shown: 'poked', undo: null });
  t.true(h.logs.some((l) => l.includes('it cannot be undone')));
});
