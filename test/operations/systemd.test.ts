// examples/systemd/oncall.service (issue 24): hardened as docs/install.md says, and valid for
// systemd's own checker.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { ROOT } from '../helpers/cli.ts';
import { testNeeding } from '../helpers/needs.ts';

const UNIT = path.join(ROOT, 'examples', 'systemd', 'oncall.service');
const ENV = path.join(ROOT, 'examples', 'systemd', 'oncall.env');
const ANALYZE = '/usr/bin/systemd-analyze';
const missing = existsSync(ANALYZE) ? null : `${ANALYZE} not found (apt-get install systemd)`;

const run = (args: string[]) =>
  new Promise<{ code: number; out: string }>((resolve) =>
    execFile(ANALYZE, args, { timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, out: stdout + stderr }),
    ),
  );

/** The unit as installed on this machine: ExecStart and the environment file where they are here. */
function installed(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-unit-'));
  writeFileSync(path.join(dir, 'oncall.env'), readFileSync(ENV));
  writeFileSync(
    path.join(dir, 'oncall.service'),
    readFileSync(UNIT, 'utf8')
      .replace('/opt/oncall/node_modules/.bin/node', path.join(ROOT, 'node_modules', '.bin', 'node'))
      .replace('/etc/oncall/oncall.env', path.join(dir, 'oncall.env')),
  );
  return dir;
}

test('the unit runs the service as a dedicated user with only its data directory writable, restarts it on failure and gives the shutdown its deadline', (t) => {
  const unit = readFileSync(UNIT, 'utf8');
  const directives = new Map<string, string[]>();
  for (const line of unit.split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (m !== null) directives.set(m[1]!, [...(directives.get(m[1]!) ?? []), m[2]!]);
  }
  const one = (k: string) => directives.get(k)?.[0];
  t.is(one('User'), 'oncall');
  t.is(one('ProtectSystem'), 'strict');
  t.is(one('ReadWritePaths'), '/var/lib/oncall');
  t.true(directives.get('Environment')?.includes('SERVICE_DATA_DIR=/var/lib/oncall'));
  t.is(one('NoNewPrivileges'), 'yes');
  t.is(one('Restart'), 'on-failure');
  t.is(one('EnvironmentFile'), '/etc/oncall/oncall.env');
  t.is(
    one('ExecStart'),
    '/opt/oncall/node_modules/.bin/node --no-experimental-strip-types host/main.js',
    "the package's compiled JavaScript, no type stripping",
  );
  t.is(one('UMask'), '0077');
  t.is(one('CapabilityBoundingSet'), '');
  // The service exits within 10 s of SIGTERM (docs/operations.md); systemd waits a little longer.
  t.is(one('TimeoutStopSec'), '15s');
  t.is(directives.get('MemoryDenyWriteExecute'), undefined, "Node's JIT needs writable code pages");
  for (const line of readFileSync(ENV, 'utf8').split('\n')) if (/^SERVICE_[A-Z_]+=/.test(line)) t.regex(line, /^SERVICE_[A-Z_]+=\S*$/, line);
});

testNeeding(missing, 'systemd-analyze verify accepts the unit, and its security exposure is rated OK', async (t) => {
  const dir = installed();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const verify = await run(['verify', path.join(dir, 'oncall.service')]);
  t.is(verify.code, 0, verify.out);
  t.is(verify.out.trim(), '', verify.out);
  const security = await run(['security', '--offline=true', path.join(dir, 'oncall.service')]);
  const level = /Overall exposure level for oncall\.service: ([\d.]+) (\w+)/.exec(security.out);
  t.truthy(level, security.out);
  t.true(Number(level![1]) <= 2, security.out.split('\n').slice(-3).join('\n'));
  t.is(level![2], 'OK');
});
