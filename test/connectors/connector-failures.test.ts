// Which call set a connector's last problem is data (connector_status.failed_by), not read back
// from the problem's words: a test whose problem happens to begin "the poll" is still a test's
// problem, so a good poll after it is no `connector.poll_recovered`.
import test from 'ava';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { makeOperating, startApp } from '../helpers/app.ts';

function flakyPlugin(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'oncall-flaky-'));
  const dir = path.join(root, 'connectors', 'flaky');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'plugin.json'),
    JSON.stringify({
      name: 'flaky',
      version: '1.0.0',
      kind: 'connector',
      api: '^1.0.0',
      entry: 'index.mjs',
      settings: {
        type: 'object',
        additionalProperties: false,
        properties: { fail_when: { type: 'string', description: 'Polls fail while this file exists.' } },
      },
    }),
  );
  writeFileSync(
    path.join(dir, 'index.mjs'),
    `import { existsSync } from 'node:fs';
export default {
  test: () => ({ ok: false, problem: 'the poll endpoint is down' }),
  pollAlerts: (ctx) => { if (ctx.settings.fail_when !== undefined && existsSync(ctx.settings.fail_when)) throw new Error('source unreachable'); return []; },
};
`,
  );
  return root;
}

test('a good poll after a failed test marks the connector ok without a poll_recovered event; after a failed poll it records one', async (t) => {
  const plugins = flakyPlugin();
  t.teardown(() => rmSync(plugins, { recursive: true, force: true }));
  const ta = await startApp(t, { env: { SERVICE_PLUGINS_DIR: plugins } });
  await makeOperating(ta);
  const recovered = async () => (await ta.call('GET', '/v1/ledger?type=connector.poll_recovered&limit=100')).body.events.length as number;

  t.is((await ta.call('PUT', '/v1/connectors/f', { body: { kind: 'flaky', settings: {} } })).status, 201);
  t.like((await ta.call('POST', '/v1/connectors/f/check')).body, { state: 'problem', last_problem: 'the poll endpoint is down' });
  await ta.app.poller.pollNow();
  t.like((await ta.call('GET', '/v1/connectors/f')).body, { state: 'ok', last_problem: null });
  t.is(await recovered(), 0, 'the test failed, not a poll');

  const flag = path.join(plugins, 'down');
  writeFileSync(flag, '');
  t.is((await ta.call('PUT', '/v1/connectors/g', { body: { kind: 'flaky', settings: { fail_when: flag } } })).status, 201);
  await ta.app.poller.pollNow();
  t.like((await ta.call('GET', '/v1/connectors/g')).body, { state: 'problem', last_problem: 'the poll failed: source unreachable' });
  unlinkSync(flag);
  ta.clock.advance(60_000);
  await ta.app.poller.pollNow();
  t.like((await ta.call('GET', '/v1/connectors/g')).body, { state: 'ok', last_problem: null });
  t.is(await recovered(), 1, 'a poll failed, and the next one worked');
});
