import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import test from 'ava';
import { createTestStore } from './helpers/db.ts';

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

test('npm start runs host/main.ts', (t) => {
  t.is(JSON.parse(readFileSync('package.json', 'utf8')).scripts.start, 'node host/main.ts');
});

test('the service starts on a fresh data directory, prints the admin token once, serves, and stops on SIGTERM', async (t) => {
  const store = await createTestStore();
  t.teardown(() => store.cleanup());
  const port = await freePort();
  const child = spawn(process.execPath, ['host/main.ts'], {
    env: {
      ...process.env,
      SERVICE_DATA_DIR: store.dataDir,
      SERVICE_DATABASE_URL: store.databaseUrl ?? '',
      SERVICE_PORT: String(port),
      SERVICE_HOST: '127.0.0.1',
      SERVICE_ADMIN_TOKEN: '',
    },
  });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const started = Date.now();
  while (!out.includes('Console and API on')) {
    if (Date.now() - started > 30_000) t.fail(`did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50)); // waiting for a child process to boot, not for a rule
  }
  const token = /Admin token[^\n]*\n\n\s+(\S+)/.exec(out)?.[1];
  t.truthy(token);
  const res = await fetch(`http://127.0.0.1:${port}/v1/ledger`, { headers: { authorization: `Bearer ${token}` } });
  t.is(res.status, 200);
  t.is(out.split(token!).length - 1, 1, 'the token appears exactly once in the output');
  child.kill('SIGTERM');
  t.is(await exited, 0);
});

test('a bad configuration stops the start with exit code 2 and names the variable', async (t) => {
  const child = spawn(process.execPath, ['host/main.ts'], { env: { ...process.env, SERVICE_PORT: 'not-a-port' } });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  t.is(code, 2);
  t.regex(err, /SERVICE_PORT/);
});
