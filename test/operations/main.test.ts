import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { deliverAdminToken } from '../../host/first-start.ts';
import { silentLogger } from '../../host/log.ts';
import { createTestStore } from '../helpers/db.ts';
import { listeningPort } from '../helpers/listening.ts';

test('npm start runs host/main.ts', (t) => {
  t.is(JSON.parse(readFileSync('package.json', 'utf8')).scripts.start, 'node host/main.ts');
});

test('the service starts on a fresh data directory, leaves the admin token in a 0600 file the log names (no terminal), serves, and stops on SIGTERM', async (t) => {
  const store = await createTestStore();
  t.teardown(() => store.cleanup());
  const child = spawn(process.execPath, ['host/main.ts'], {
    env: {
      ...process.env,
      SERVICE_DATA_DIR: store.dataDir,
      SERVICE_DATABASE_URL: store.databaseUrl ?? '',
      // Port 0: the host chooses its own and prints it (a port picked here could be taken meanwhile).
      SERVICE_PORT: '0',
      SERVICE_HOST: '127.0.0.1',
      SERVICE_ADMIN_TOKEN: '',
    },
  });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const started = Date.now();
  let port: number | null;
  while ((port = listeningPort(out)) === null) {
    if (Date.now() - started > 60_000) throw new Error(`did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50)); // waiting for a child process to boot, not for a rule
  }
  // stdout is a pipe here, as under systemd: it carries the JSON log, so the token is not in it.
  const file = path.join(store.dataDir, 'admin-token');
  t.is(statSync(file).mode & 0o777, 0o600);
  const token = readFileSync(file, 'utf8').trim();
  t.regex(token, /^[A-Za-z0-9_-]{43}$/);
  t.false(out.includes(token), 'the token is nowhere in the output');
  const named = out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { admin_token_file?: string })
    .find((l) => l.admin_token_file !== undefined);
  t.is(named?.admin_token_file, file, 'the log names the file');
  const res = await fetch(`http://127.0.0.1:${port}/v1/ledger`, { headers: { authorization: `Bearer ${token}` } });
  t.is(res.status, 200);
  child.kill('SIGTERM');
  t.is(await exited, 0);
});

test('on a terminal the first start prints the admin token there once, and writes no file', (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oncall-token-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  let shown = '';
  deliverAdminToken('tok-123', { terminal: true, dataDir, write: (s) => (shown += s), log: silentLogger() });
  t.is(shown.split('tok-123').length - 1, 1);
  t.false(existsSync(path.join(dataDir, 'admin-token')));
});

test('a bad configuration stops the start with exit code 2 and names the variable', async (t) => {
  const child = spawn(process.execPath, ['host/main.ts'], { env: { ...process.env, SERVICE_PORT: 'not-a-port' } });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  t.is(code, 2);
  t.regex(err, /SERVICE_PORT/);
});
