import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { browserAs, browserTest, closeBrowser, consoleBuilt, heading, visited, type BrowserPage } from '../helpers/browser.ts';
import { signedIn } from '../helpers/people.ts';

/*
 * The console's settings pages (connectors, policy, people, settings) in a real browser
 * (Debian's Chromium through playwright-core) against the whole service: a connector's secret
 * saved and never shown back, file-managed connectors and policy read-only with the reason, a
 * policy the server refuses naming the field while the form keeps what was typed, and a viewer
 * offered no change controls. Each page visited is saved as a screenshot under test/artifacts/
 * and checked with axe-core. See docs/console.md, "Tested in a real browser: settings".
 */

test.after.always(closeBrowser);

/** An operating install with its console; `env` adds SERVICE_* variables (SERVICE_CONFIG_DIR). */
async function operating(t: ExecutionContext, env: Record<string, string | undefined> = {}): Promise<TestApp> {
  await consoleBuilt();
  const ta = await startApp(t, { env });
  await makeOperating(ta);
  return ta;
}

/** A folder for SERVICE_CONFIG_DIR holding `files` (name → JSON), removed after the test. */
function configDir(t: ExecutionContext, files: Record<string, unknown>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-console-settings-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, content] of Object.entries(files)) writeFileSync(path.join(dir, name), JSON.stringify(content));
  return dir;
}

/**
 * A local HTTP system for the `http` connector: 200 on /healthz for the right bearer token, 401
 * otherwise. `seen` lists the Authorization headers it was sent.
 */
async function system(t: ExecutionContext, token: string): Promise<{ base: string; seen: Array<string | undefined> }> {
  const seen: Array<string | undefined> = [];
  const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.push(req.headers.authorization);
    const ok = req.headers.authorization === `Bearer ${token}`;
    res.writeHead(!ok ? 401 : req.url === '/healthz' ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(!ok ? { error: 'unauthorized' } : req.url === '/healthz' ? { status: 'up' } : { error: 'no such path' }));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))));
  return { base: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, seen };
}

/** Where a secret shows up: the page's HTML, API answers, the whole ledger, the service's log. */
async function leaks(ta: TestApp, bp: BrowserPage, answers: unknown[], secret: string): Promise<string[]> {
  const ledger = await ta.call('GET', '/v1/ledger?limit=2000');
  const texts: Record<string, string> = {
    page: await bp.page.content(),
    answers: JSON.stringify(answers),
    ledger: JSON.stringify(ledger.body),
    logs: ta.logs.join('\n'),
  };
  const forms = [secret, Buffer.from(secret).toString('base64')];
  return forms.flatMap((s) =>
    Object.entries(texts)
      .filter(([, text]) => text.includes(s))
      .map(([where]) => `${s === secret ? 'the secret' : 'its base64'} in ${where}`),
  );
}

const VALID_POLICY = {
  default_autonomy: 'off',
  ceilings: { payments: 'L1' },
  safe_for_l2: ['restart_pod'],
  always_approve: ['rollback_deploy'],
  freeze_windows: [{ name: 'year end', start: '2026-12-24T18:00:00Z', end: '2027-01-02T08:00:00Z' }],
  max_actions_per_service_per_hour: 10,
};

/** The names of the enabled buttons inside <main> (the header's halt switch is outside it). */
const mainButtons = (bp: BrowserPage) => bp.page.locator('main button').allInnerTexts();
const CHANGE = /save|add|delete|remove|edit|test|check|change|disable|enable|password|send/i;

browserTest(
  'a connector saved with a secret never shows it again: not in the page, the API or the ledger; an edit with the secret blank keeps it',
  async (t) => {
    const SECRET = 'e2e-bearer-S3cr3t-4f9a1c7d0b2e';
    const sys = await system(t, SECRET);
    const ta = await operating(t);
    const bp = await browserAs(t, ta.base, await signedIn(ta, 'alice@bank.example', 'admin'));
    const { page } = bp;

    await page.goto(ta.base + '/connectors');
    await heading(bp, 'Connectors').waitFor();
    await page.getByText('No connector yet.').waitFor();
    await visited(t, bp, 'e2e-settings-1-connectors-empty');

    await page.getByRole('button', { name: 'Add a connector' }).click();
    const form = page.getByRole('form', { name: 'New connector' });
    await form.waitFor();
    await form.getByLabel('Name', { exact: true }).fill('orders-api');
    await form.getByLabel('Kind').selectOption('http');
    await form.getByRole('group', { name: 'Settings for http' }).waitFor();
    await form.getByLabel(/^base_url/).fill(sys.base);
    await form.getByLabel(/^health_path/).fill('/healthz');
    const secretBox = form.getByLabel(/^bearer_token/);
    t.is(await secretBox.getAttribute('type'), 'password');
    t.regex(await form.locator('label[for="connector-setting-bearer_token"]').innerText(), /\(secret, not set\)/);
    await secretBox.fill(SECRET);
    const save = form.getByRole('button', { name: 'Save', exact: true });
    t.true(await save.isDisabled(), 'no save before a test');
    await form.getByRole('button', { name: 'Test', exact: true }).click();
    await form
      .getByRole('status')
      .filter({ hasText: /✓ Test passed in \d+ ms\./ })
      .waitFor();
    t.deepEqual(sys.seen, [`Bearer ${SECRET}`], 'the test sent the secret to the system, and only there');
    await visited(t, bp, 'e2e-settings-1-connector-tested');
    t.false(await save.isDisabled(), 'save is offered once these settings are tested');
    await save.click();

    // The list: secret set, never its value.
    const card = page.locator('ul.cards > li').filter({ has: page.getByRole('heading', { name: /^orders-api/ }) });
    await card.getByText('Saved orders-api; the test just run counts as its check.').waitFor();
    t.is(await form.count(), 0, 'the form closed');
    // Saved right after a passing test: checked, not "not checked since saved; last checked never".
    t.regex(await card.innerText(), /State: ✓ ok; last checked .*(UTC|GMT)/);
    t.notRegex(await card.innerText(), /not checked|never/);
    await card.getByText('Settings', { exact: true }).click();
    const settingsText = await card.locator('dl').innerText();
    t.regex(settingsText, /bearer_token\s+secret: set/);
    t.regex(settingsText, new RegExp(`base_url\\s+${sys.base.replace(/[.:/]/g, '\\$&')}`));
    t.regex(await card.innerText(), /Saved .* by alice@bank\.example/);
    await visited(t, bp, 'e2e-settings-1-connector-saved');

    const api = (await ta.call('GET', '/v1/connectors')).body;
    const saved = api.connectors.find((c: any) => c.name === 'orders-api');
    t.like(saved, {
      source: 'console',
      kind: 'http',
      settings: { base_url: sys.base, health_path: '/healthz', bearer_token: { set: true } },
      updated_by: 'alice@bank.example',
    });
    const events = (await ta.call('GET', '/v1/ledger?type=config.connector_saved')).body.events as any[];
    t.is(events.length, 1);
    t.like(events[0], { actor: 'alice@bank.example', data: { name: 'orders-api', kind: 'http', created: true, secrets_set: ['bearer_token'] } });
    t.deepEqual(await leaks(ta, bp, [api], SECRET), []);

    // Edit with the secret left blank: a timeout changes, the secret stays.
    await card.getByRole('button', { name: 'Edit orders-api' }).click();
    const edit = page.getByRole('form', { name: 'Edit orders-api' });
    await edit.waitFor();
    t.regex(await edit.locator('label[for="connector-setting-bearer_token"]').innerText(), /\(secret, set\)/);
    t.is(await edit.getByLabel(/^bearer_token/).inputValue(), '', 'the secret is never put back in the form');
    t.is(await edit.getByLabel(/^bearer_token/).getAttribute('placeholder'), 'set: leave blank to keep it');
    t.true(await edit.getByLabel('Name', { exact: true }).evaluate((e) => (e as unknown as { readOnly: boolean }).readOnly), 'a saved name cannot change');
    await edit.getByLabel(/^timeout_s/).fill('5');
    await edit.getByRole('button', { name: 'Test', exact: true }).click();
    // The test of an edit takes the stored secret (the system answers 401 without it).
    await edit
      .getByRole('status')
      .filter({ hasText: /✓ Test passed/ })
      .waitFor();
    t.is(sys.seen.at(-1), `Bearer ${SECRET}`);
    await visited(t, bp, 'e2e-settings-1-connector-edit-tested');
    await edit.getByRole('button', { name: 'Save', exact: true }).click();
    await card.getByText('Saved orders-api; the test just run counts as its check.').waitFor();
    await edit.waitFor({ state: 'detached' });

    const after = (await ta.call('GET', '/v1/connectors/orders-api')).body;
    t.like(after, { settings: { base_url: sys.base, timeout_s: 5, bearer_token: { set: true } } });
    const checked = (await ta.call('POST', '/v1/connectors/orders-api/check')).body;
    t.like(checked, { state: 'ok', check: { ok: true } }, 'the kept secret still works');
    t.is(sys.seen.at(-1), `Bearer ${SECRET}`);
    const events2 = (await ta.call('GET', '/v1/ledger?type=config.connector_saved')).body.events as any[];
    t.like(events2[0], { data: { name: 'orders-api', created: false, secrets_set: ['bearer_token'] } });
    await page.reload();
    await card.waitFor();
    await card.getByText('Settings', { exact: true }).click();
    t.regex(await card.locator('dl').innerText(), /bearer_token\s+secret: set/);
    await visited(t, bp, 'e2e-settings-1-connector-edited');
    t.deepEqual(await leaks(ta, bp, [after, checked], SECRET), []);
    t.deepEqual(bp.problems, []);
  },
);

browserTest('a connector from connectors.json is read-only with the reason; a policy the server refuses names the field and keeps the form', async (t) => {
  const dir = configDir(t, { 'connectors.json': { 'orders-file': { kind: 'http', settings: { base_url: 'http://127.0.0.1:9', health_path: '/healthz' } } } });
  const ta = await operating(t, { SERVICE_CONFIG_DIR: dir });
  const bp = await browserAs(t, ta.base, await signedIn(ta, 'alice@bank.example', 'admin'));
  const { page } = bp;

  await page.goto(ta.base + '/connectors');
  await heading(bp, 'Connectors').waitFor();
  const card = page.locator('ul.cards > li').filter({ has: page.getByRole('heading', { name: /^orders-file/ }) });
  await card.waitFor();
  t.regex(
    await card.innerText(),
    /Managed by the file connectors\.json on the server: read-only here\. Change the file and restart the service to change it\./,
  );
  t.is(await card.getByRole('button', { name: 'Edit orders-file' }).count(), 0);
  t.is(await card.getByRole('button', { name: 'Remove orders-file' }).count(), 0);
  t.is(await card.getByRole('button', { name: 'Check orders-file' }).count(), 1, 'a file connector can still be checked');
  t.regex(
    await page.getByText('Some connectors come from the file').innerText(),
    new RegExp(`${path.join(dir, 'connectors.json').replace(/[.\\/-]/g, '\\$&')}`),
  );
  t.like((await ta.call('GET', '/v1/connectors')).body.connectors[0], { name: 'orders-file', source: 'file' });
  await visited(t, bp, 'e2e-settings-2-connectors-file');

  // Saving a connector under the file's name: the 409 is explained and the form keeps what was typed.
  await page.getByRole('button', { name: 'Add a connector' }).click();
  const form = page.getByRole('form', { name: 'New connector' });
  await form.getByLabel('Name', { exact: true }).fill('orders-file');
  await form.getByLabel('Kind').selectOption('http');
  await form.getByLabel(/^base_url/).fill('http://127.0.0.1:9');
  await form.getByRole('button', { name: 'Test', exact: true }).click();
  const anyway = form.getByRole('button', { name: 'Save despite the failed test' });
  await anyway.waitFor();
  await anyway.click();
  const refusal = form.locator('[role="alert"]').filter({ hasText: /connectors\.json|file/ });
  await refusal.waitFor();
  t.regex(await refusal.innerText(), /file/i);
  t.is(await form.getByLabel('Name', { exact: true }).inputValue(), 'orders-file', 'nothing typed is lost');
  t.is(await form.getByLabel(/^base_url/).inputValue(), 'http://127.0.0.1:9');
  t.like((await ta.call('GET', '/v1/connectors')).body.connectors[0], { name: 'orders-file', source: 'file' });
  await visited(t, bp, 'e2e-settings-2-connector-409');
  await form
    .getByRole('button', { name: 'Cancel' })
    .click()
    .catch(() => undefined);

  // The policy: a freeze window ending before it starts.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Policy' }).click();
  await heading(bp, 'Policy').waitFor();
  await page.getByText('Version 0, the default (never changed).').waitFor();
  await page.getByRole('button', { name: 'Add a freeze window' }).click();
  await page.getByLabel('Name', { exact: true }).fill('year end');
  await page.getByLabel('Start (UTC, …Z)').fill('2027-01-02T08:00:00Z');
  await page.getByLabel('End (UTC, …Z)').fill('2026-12-24T18:00:00Z');
  await page.getByLabel('Actions per service per hour').fill('9');
  await page.getByRole('button', { name: 'Save policy' }).click();
  const error = page.locator('main').getByRole('alert');
  await error.waitFor();
  t.regex(await error.innerText(), /^Error: Not saved: .*freeze_windows\.0\.end must be after its start/);
  t.is(await page.getByLabel('Name', { exact: true }).inputValue(), 'year end', 'the form keeps what was typed');
  t.is(await page.getByLabel('Start (UTC, …Z)').inputValue(), '2027-01-02T08:00:00Z');
  t.is(await page.getByLabel('End (UTC, …Z)').inputValue(), '2026-12-24T18:00:00Z');
  t.is(await page.getByLabel('Actions per service per hour').inputValue(), '9');
  t.like((await ta.call('GET', '/v1/policy')).body, { version: 0, source: 'default', freeze_windows: [] }, 'nothing saved');
  await visited(t, bp, 'e2e-settings-2-policy-refused');

  // Corrected, it saves.
  await page.getByLabel('End (UTC, …Z)').fill('2027-01-03T08:00:00Z');
  await page.getByRole('button', { name: 'Save policy' }).click();
  await page.getByRole('status').filter({ hasText: '✓ Saved: the policy is now version 1.' }).waitFor();
  t.is(await error.count(), 0, 'the error is gone');
  t.like((await ta.call('GET', '/v1/policy')).body, {
    version: 1,
    source: 'console',
    max_actions_per_service_per_hour: 9,
    freeze_windows: [{ name: 'year end', start: '2027-01-02T08:00:00Z', end: '2027-01-03T08:00:00Z' }],
  });
  await visited(t, bp, 'e2e-settings-2-policy-saved');
  t.deepEqual(bp.problems, []);
});

browserTest('a policy.json in the config folder makes the policy page read-only with the reason', async (t) => {
  const ta = await operating(t, { SERVICE_CONFIG_DIR: configDir(t, { 'policy.json': VALID_POLICY }) });
  t.like((await ta.call('GET', '/v1/policy')).body, { source: 'file', max_actions_per_service_per_hour: 10 });
  const bp = await browserAs(t, ta.base, await signedIn(ta, 'alice@bank.example', 'admin'));
  const { page } = bp;

  await page.goto(ta.base + '/policy');
  await heading(bp, 'Policy').waitFor();
  await page.getByText(/from policy\.json/).waitFor();
  t.is(await page.getByText('Managed by the file policy.json on the server: read-only here. Change the file and restart the service to change it.').count(), 1);
  t.is(await page.getByRole('button', { name: 'Save policy' }).count(), 0);
  t.deepEqual(
    (await mainButtons(bp)).filter((b) => CHANGE.test(b)),
    [],
    'an admin is offered no change on a file-managed policy',
  );
  t.is(await page.getByLabel('Actions per service per hour').inputValue(), '10', "the file's policy is shown");
  t.is(await page.getByLabel('Actions per service per hour').getAttribute('readonly'), '');
  t.true(await page.getByLabel('Default autonomy').isDisabled());
  t.is(await page.getByLabel('Start (UTC, …Z)').getAttribute('readonly'), '');
  await visited(t, bp, 'e2e-settings-3-policy-file');

  // JSON text shows the same, read-only.
  await page.getByLabel('JSON text').check();
  const text = page.getByLabel('Policy as JSON');
  await text.waitFor();
  t.is(await text.getAttribute('readonly'), '');
  t.like(JSON.parse(await text.inputValue()), VALID_POLICY);
  await visited(t, bp, 'e2e-settings-3-policy-file-json');
  t.deepEqual(bp.problems, []);
});

browserTest('a viewer sees the connectors, policy, people and settings pages, and is offered no change', async (t) => {
  const ta = await operating(t);
  const put = await ta.call('PUT', '/v1/connectors/orders-api', {
    body: { kind: 'http', settings: { base_url: 'http://127.0.0.1:9', bearer_token: 'viewer-test-S3cr3t-88a1' } },
  });
  t.is(put.status, 201);
  t.is((await ta.call('PUT', '/v1/policy', { body: VALID_POLICY })).status, 200);
  const bp = await browserAs(t, ta.base, await signedIn(ta, 'vic@bank.example', 'viewer'));
  const { page } = bp;
  const nav = page.getByRole('navigation', { name: 'Main' });

  await page.goto(ta.base + '/connectors');
  await heading(bp, 'Connectors').waitFor();
  const card = page.locator('ul.cards > li').filter({ has: page.getByRole('heading', { name: /^orders-api/ }) });
  await card.waitFor();
  await page.getByText('You are signed in as a viewer: you can see them, not change them.').waitFor();
  await card.getByText('Settings', { exact: true }).click();
  t.regex(await card.locator('dl').innerText(), /bearer_token\s+secret: set/);
  t.deepEqual(await mainButtons(bp), [], 'no Add, Edit, Check, Remove');
  t.false((await page.content()).includes('viewer-test-S3cr3t-88a1'));
  await visited(t, bp, 'e2e-settings-4-viewer-connectors');

  await nav.getByRole('link', { name: 'Policy' }).click();
  await heading(bp, 'Policy').waitFor();
  await page.getByText('You are signed in as a viewer: you can see the policy, not change it.').waitFor();
  await page.getByText(/Version 1, set in the console/).waitFor();
  t.deepEqual(await mainButtons(bp), [], 'no Save policy, Add or Remove');
  t.is(await page.getByLabel('Actions per service per hour').getAttribute('readonly'), '');
  t.true(await page.getByLabel('Default autonomy').isDisabled());
  await visited(t, bp, 'e2e-settings-4-viewer-policy');

  await nav.getByRole('link', { name: 'People' }).click();
  await heading(bp, 'People').waitFor();
  await page.getByText('You are signed in as a viewer: you can see the list, not change it.').waitFor();
  await page.getByText('<vic@bank.example>').waitFor();
  await page.getByText('<owner@bank.example>').waitFor();
  t.deepEqual(await mainButtons(bp), [], 'no Add person, Change role, Disable or password');
  t.is(await page.getByRole('form').count(), 0, 'no add form');
  await visited(t, bp, 'e2e-settings-4-viewer-people');

  await nav.getByRole('link', { name: 'Settings' }).click();
  await heading(bp, 'Settings').waitFor();
  await page.getByText('You are signed in as a viewer: you can see these, not change them.').waitFor();
  await page.getByRole('heading', { name: 'Access policy' }).waitFor();
  await page.getByRole('heading', { name: 'Mail', exact: true }).waitFor();
  t.deepEqual(await mainButtons(bp), [], 'no Save access policy, Save mail settings or Send test e-mail');
  t.is(await page.getByLabel('Allowed domains').getAttribute('readonly'), '');
  t.true(await page.getByLabel('Refuse public webmail addresses', { exact: false }).isDisabled());
  t.true(await page.getByLabel('Provider').isDisabled());
  await visited(t, bp, 'e2e-settings-4-viewer-settings');

  // And the API refuses a viewer anyway.
  const token = await page.evaluate(() => (globalThis as any).sessionStorage.getItem('oncall.session') as string);
  t.is((await ta.call('PUT', '/v1/connectors/orders-api', { token, body: { kind: 'http', settings: { base_url: 'http://127.0.0.1:9' } } })).status, 403);
  t.is((await ta.call('PUT', '/v1/policy', { token, body: VALID_POLICY })).status, 403);
  t.deepEqual(bp.problems, []);
});
