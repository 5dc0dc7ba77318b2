// TLS (issue 24): SERVICE_TLS_CERT/SERVICE_TLS_KEY serve HTTPS on the same port, and a renewed
// certificate is served without a restart; files that cannot be used stop the start in one line.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { ADMIN_TOKEN, serviceEnv, startApp } from '../helpers/app.ts';
import { createTestStore } from '../helpers/db.ts';
import { testNeeding } from '../helpers/needs.ts';
import { waitFor } from '../helpers/wait.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const opensslMissing = spawnSync('openssl', ['version'], { stdio: 'ignore' }).status === 0 ? null : 'openssl is not installed';

/** A self-signed certificate for 127.0.0.1 (key and certificate PEM files in `dir`, named after `name`). */
function certificate(dir: string, name: string): { cert: string; key: string; fingerprint: string } {
  const cert = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-subj',
      `/CN=${name}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-days',
      '2',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key, fingerprint: new X509Certificate(readFileSync(cert)).fingerprint256 };
}

/** GET over HTTPS trusting exactly `ca`: the status and the fingerprint of the certificate served. */
function get(port: number, pathName: string, ca: string): Promise<{ status: number; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: pathName, ca: readFileSync(ca), agent: false }, (res) => {
      const fingerprint = (res.socket as TLSSocket).getPeerX509Certificate()?.fingerprint256 ?? '';
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, fingerprint }));
    });
    req.on('error', reject);
    req.end();
  });
}

testNeeding(
  opensslMissing,
  'with SERVICE_TLS_CERT and SERVICE_TLS_KEY the port serves HTTPS only, and a renewed certificate is served without a restart',
  async (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'oncall-tls-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const first = certificate(dir, 'first');
    const second = certificate(dir, 'second');
    const third = certificate(dir, 'third');
    const certFile = path.join(dir, 'tls.crt');
    const keyFile = path.join(dir, 'tls.key');
    copyFileSync(first.cert, certFile);
    copyFileSync(first.key, keyFile);
    const ta = await startApp(t, { manualTick: true, env: { SERVICE_TLS_CERT: certFile, SERVICE_TLS_KEY: keyFile } });
    const port = Number(new URL(ta.base).port);

    t.deepEqual(await get(port, '/health', first.cert), { status: 200, fingerprint: first.fingerprint });
    const plain = await new Promise<string>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/health', agent: false }, (res) => resolve(`answered ${res.statusCode}`));
      req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      req.end();
    });
    t.not(plain, 'answered 200', 'plain HTTP is not served');

    // A renewal as certbot does it: new files renamed into place.
    copyFileSync(second.cert, `${certFile}.new`);
    copyFileSync(second.key, `${keyFile}.new`);
    renameSync(`${keyFile}.new`, keyFile);
    renameSync(`${certFile}.new`, certFile);
    await waitFor(
      'the renewed certificate',
      async () => (await get(port, '/health', second.cert).catch(() => null))?.fingerprint === second.fingerprint,
      15_000,
      200,
    );
    t.true(ta.logs.some((l) => l.includes('"msg":"TLS certificate reloaded"')));

    // Half a renewal (a new certificate beside the old key) is not served: the working pair stays.
    copyFileSync(third.cert, certFile);
    await waitFor('the mismatch to be seen', async () => ta.logs.some((l) => l.includes('still serving the previous certificate')), 15_000, 200);
    t.false(ta.app.tls!.reload());
    t.deepEqual(await get(port, '/health', second.cert), { status: 200, fingerprint: second.fingerprint });
    for (const l of ta.logs) t.false(l.includes('PRIVATE KEY'), 'no key material in the log');
    copyFileSync(third.key, keyFile);
    t.true(ta.app.tls!.reload());
    t.is((await get(port, '/health', third.cert)).fingerprint, third.fingerprint);
  },
);

test('TLS files that cannot be read stop the start in one line naming the variable and the file', async (t) => {
  const store = await createTestStore();
  t.teardown(() => store.cleanup());
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SERVICE_') && !k.startsWith('TEST_')) env[k] = v;
  const missing = path.join(store.dataDir, 'nope.crt');
  for (const [k, v] of Object.entries(
    serviceEnv(store, { SERVICE_PORT: '0', SERVICE_TLS_CERT: missing, SERVICE_TLS_KEY: missing, SERVICE_ADMIN_TOKEN: ADMIN_TOKEN }),
  ))
    if (v !== undefined) env[k] = v;
  const child = spawn(process.execPath, ['host/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  t.is(await new Promise<number | null>((resolve) => child.once('exit', resolve)), 1);
  t.is(err, `Cannot start: cannot read SERVICE_TLS_CERT ${missing} (ENOENT)\n`);
});
