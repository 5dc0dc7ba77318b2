import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { startApp } from '../helpers/app.ts';

const script = 'examples/licence/sign-licence.ts';

test('a licence signed by the example script installs on a service that trusts its key', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-vendor-'));
  execFileSync(process.execPath, [script, 'keygen', dir]);
  const signed = execFileSync(process.execPath, [script, 'sign', path.join(dir, 'vendor.key'), 'examples/licence/licence.example.json'], { encoding: 'utf8' });
  const ta = await startApp(t, { env: { SERVICE_LICENCE_PUBKEY: readFileSync(path.join(dir, 'vendor.pub'), 'utf8') } });
  const res = await ta.call('POST', '/v1/licence', { body: { licence: JSON.parse(signed) } });
  t.is(res.status, 200);
  t.is(res.body.licence.customer, 'Example Bank');
});

test('a licence signed by the example script is refused by a service that does not trust its key', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-vendor-'));
  execFileSync(process.execPath, [script, 'keygen', dir]);
  const file = path.join(dir, 'l.json');
  writeFileSync(file, readFileSync('examples/licence/licence.example.json'));
  const signed = execFileSync(process.execPath, [script, 'sign', path.join(dir, 'vendor.key'), file], { encoding: 'utf8' });
  const ta = await startApp(t);
  const res = await ta.call('POST', '/v1/licence', { body: { licence: JSON.parse(signed) } });
  t.is(res.status, 400);
  t.is(res.body.error, 'bad_licence');
});
