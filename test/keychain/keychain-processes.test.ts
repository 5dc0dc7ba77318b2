import { DAY, MINUTE, TestClock } from '../../host/clock.ts';
import { ADMIN_TOKEN, signLicence, testVendor } from '../helpers/app.ts';
import { startHostProcesses, type HostProcess } from '../helpers/host-process.ts';
import { startInstall, type Install } from '../helpers/keychain.ts';
import { mariadbMissing } from '../helpers/db.ts';
import { testNeeding } from '../helpers/needs.ts';
import { allColumns, startInstallProcess, type InstallProcess } from '../helpers/install-process.ts';

/**
 * A bank's keychain as three real host processes on loopback, each with its data directory and
 * database: production (the home, SQLite), its disaster-recovery site (MariaDB) and a region
 * (SQLite). Their clocks are injected and moved together by the test (test/helpers/clocked-host.ts):
 * the 3-minute, one-day and 15-minute rules are tested on that clock, never by sleeping.
 */

const CONNECTOR_SECRET = 'prom-basic-auth-Pr0c-never-in-clear-71c2';
const SMTP_SECRET = 'smtp-relay-pass-Pr0c-never-in-clear-0b9e';
const POLICY = {
  default_autonomy: 'off',
  ceilings: {},
  safe_for_l2: [],
  always_approve: ['restart_pod'],
  freeze_windows: [],
  max_actions_per_service_per_hour: 4,
};

const missing = await mariadbMissing();

testNeeding(
  missing,
  'three installs (one on MariaDB): pairing, scope and an own value, a member stopped 3 minutes and a day, the home stopped 15 minutes and a take-over, the old home’s return; every ledger verifies and no secret is in clear',
  async (t) => {
    t.timeout(600_000);
    let now = new Date('2026-06-01T08:00:00.000Z');
    const [prod, dr, region] = await Promise.all([
      startInstallProcess(t, 'prod', { mariadb: false, at: now }),
      startInstallProcess(t, 'dr', { mariadb: true, at: now }),
      startInstallProcess(t, 'region', { mariadb: false, at: now }),
    ]);
    const all = [prod, dr, region];
    /** Moves every running install's clock by `ms` and runs their ticks, one after the other. */
    const advance = async (ms: number, running: InstallProcess[] = all) => {
      now = new Date(now.getTime() + ms);
      for (const i of running) await i.setClock(now);
      for (const i of running) await i.tick();
    };
    const view = async (i: InstallProcess) => (await i.call('GET', '/v1/keychain')).body;
    const events = async (i: InstallProcess, type: string) => (await i.call('GET', `/v1/ledger?type=${type}&order=asc&limit=2000`)).body.events as any[];

    // Pairing.
    t.is((await prod.call('POST', '/v1/keychain/home', { name: 'prod', address: prod.base })).status, 200);
    for (const m of [dr, region]) {
      const key = await prod.call('POST', '/v1/keychain/site-keys');
      const joined = await m.call('POST', '/v1/keychain/join', { home: prod.base, site_key: key.body.site_key, name: m.name, address: m.base });
      t.is(joined.status, 200, JSON.stringify(joined.body));
    }
    const fp = async (i: InstallProcess) => (await i.call('GET', '/v1/status')).body.fingerprint as string;
    const [prodFp, drFp, regionFp] = await Promise.all(all.map(fp));
    t.deepEqual(
      (await view(prod)).members.map((m: any) => [m.install, m.fingerprint, m.state]),
      [
        ['dr', drFp, 'active'],
        ['region', regionFp, 'active'],
      ],
    );

    // Scope: connectors (with a secret), policy and mail reach both members on their next poll.
    t.is(
      (
        await prod.call('PUT', '/v1/connectors/metrics', {
          kind: 'prometheus',
          settings: { url: 'http://127.0.0.1:9/', username: 'svc', password: CONNECTOR_SECRET },
        })
      ).status,
      201,
    );
    await prod.call('PUT', '/v1/settings/mail', { smtp_host: 'relay.prod.bank.example', smtp_password: SMTP_SECRET });
    await prod.call('PUT', '/v1/policy', POLICY);
    t.is((await prod.call('POST', '/v1/keychain/scope', { parts: ['connectors', 'policy', 'mail'] })).status, 200);
    await advance(30_000);
    for (const m of [dr, region]) {
      t.like((await m.call('GET', '/v1/connectors/metrics')).body, { settings: { username: 'svc', password: { set: true } } }, m.name);
      t.is((await m.call('GET', '/v1/policy')).body.max_actions_per_service_per_hour, 4);
      t.deepEqual(
        (await events(m, 'config.keychain_applied')).map((e) => [e.data.part, e.data.version, e.data.home]),
        [
          ['connectors', 1, prodFp],
          ['policy', 1, prodFp],
          ['mail', 1, prodFp],
        ],
      );
    }

    // DR keeps its own mail relay.
    await prod.call('POST', '/v1/keychain/own', { install: 'dr', part: 'mail', own: true });
    // A new relay needs its password given again (a stored one is only sent where it was entered for).
    const put2 = await prod.call('PUT', '/v1/settings/mail', { smtp_host: 'relay2.prod.bank.example', smtp_password: SMTP_SECRET });
    t.is(put2.status, 200, JSON.stringify(put2.body));
    await advance(30_000);
    t.is((await dr.call('GET', '/v1/settings/mail')).body.smtp_host, 'relay.prod.bank.example');
    t.is((await region.call('GET', '/v1/settings/mail')).body.smtp_host, 'relay2.prod.bank.example');

    // The region stops: 3 minutes later it is not answering, after a day gone, and still listed.
    await region.stop();
    await advance(3 * MINUTE, [prod, dr]);
    const stateOf = async (name: string) => (await view(prod)).members.find((m: any) => m.install === name).state;
    t.is(await stateOf('region'), 'not_answering');
    t.is(await stateOf('dr'), 'active');
    await advance(DAY, [prod, dr]);
    t.is(await stateOf('region'), 'gone');
    await region.start(now);
    await advance(30_000);
    t.is(await stateOf('region'), 'active');

    // Production stops: after 15 minutes without it, an owner on DR takes over.
    await prod.stop();
    await advance(10 * MINUTE, [dr, region]);
    t.is((await dr.call('POST', '/v1/keychain/home', { take_over: true })).body.error, 'home_not_lost');
    await advance(5 * MINUTE, [dr, region]);
    t.true((await view(dr)).home.lost);
    const took = await dr.call('POST', '/v1/keychain/home', { take_over: true });
    t.is(took.status, 200, JSON.stringify(took.body));
    t.like(took.body, { role: 'home', epoch: 1, scope: ['connectors', 'policy'] });
    t.like(await view(region), { role: 'member', epoch: 1, home: { install: 'dr', fingerprint: drFp } });
    await dr.call('PUT', '/v1/policy', { ...POLICY, max_actions_per_service_per_hour: 8 });
    await advance(30_000, [dr, region]);
    t.is((await region.call('GET', '/v1/policy')).body.max_actions_per_service_per_hour, 8);

    // Production comes back: DR's next round tells it, and it says it is a member now.
    await prod.start(now);
    await advance(30_000);
    const back = await view(prod);
    t.like(back, { role: 'member', epoch: 1, home: { install: 'dr', fingerprint: drFp }, demoted: { epoch: 1, by: { name: 'dr' } } });
    t.is((await events(prod, 'config.keychain_demoted')).length, 1);
    await advance(30_000);
    t.is((await prod.call('GET', '/v1/policy')).body.max_actions_per_service_per_hour, 8);
    t.deepEqual((await view(dr)).members.map((m: any) => [m.install, m.state]).sort(), [
      ['prod', 'active'],
      ['region', 'active'],
    ]);

    // Each ledger verifies; no secret is in clear in any output, answer or column.
    for (const i of all) {
      const verify = (await i.call('GET', '/v1/ledger/verify')).body;
      t.true(verify.ok, `${i.name}: ${JSON.stringify(verify)}`);
    }
    for (const i of all) {
      const columns = await allColumns(i.db());
      for (const s of [CONNECTOR_SECRET, SMTP_SECRET]) {
        t.false(i.output().includes(s), `${i.name}: a secret in its output`);
        t.false(i.answers.join('\n').includes(s), `${i.name}: a secret in an answer`);
        t.false(columns.includes(s), `${i.name}: a secret in a database column`);
      }
    }
  },
);

testNeeding(
  missing,
  'a home of two host processes on one MariaDB: one site key offered to both at once pairs one install, and joins racing for the last install the licence allows pair one',
  async (t) => {
    t.timeout(300_000);
    const hosts = await startHostProcesses(t, 2, {
      SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
      SERVICE_SECRET_KEY: 'secret-key-shared-by-both-home-hosts-0123456789',
      SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
    });
    const [one, two] = hosts as [HostProcess, HostProcess];
    const call = async (h: HostProcess, method: string, path: string, body?: unknown) => {
      const res = await fetch(h.base + path, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    t.is((await call(one, 'POST', '/v1/licence', { licence: signLicence({ installs: 3 }) })).status, 200);
    t.is((await call(one, 'POST', '/v1/auth/bootstrap', { email: 'owner@bank.example', name: 'Owner' })).status, 201);
    t.is((await call(two, 'POST', '/v1/keychain/home', { name: 'prod', address: one.base })).status, 200);
    // The joining installs run in this process, on a clock at the hosts' time.
    const clock = new TestClock(new Date());
    const [a, b, c, d] = (await Promise.all(['a', 'b', 'c', 'd'].map((n) => startInstall(t, n, { clock })))) as [Install, Install, Install, Install];
    const join = (i: Install, h: HostProcess, key: string) =>
      i.call('POST', '/v1/keychain/join', { home: h.base, site_key: key, name: i.name, address: i.base });

    const key = (await call(one, 'POST', '/v1/keychain/site-keys')).body.site_key;
    const raced = await Promise.all([join(a, one, key), join(b, two, key)]);
    t.deepEqual(raced.map((r) => r.status).sort(), [200, 403], JSON.stringify(raced.map((r) => r.body)));
    t.is(raced.find((r) => r.status === 403)!.body.error, 'site_key_used');

    const keys = [(await call(one, 'POST', '/v1/keychain/site-keys')).body.site_key, (await call(two, 'POST', '/v1/keychain/site-keys')).body.site_key];
    const last = await Promise.all([join(c, one, keys[0]), join(d, two, keys[1])]);
    t.deepEqual(last.map((r) => r.status).sort(), [200, 409], JSON.stringify(last.map((r) => r.body)));
    t.is(last.find((r) => r.status === 409)!.body.error, 'licence_limit');
    const members = (await call(one, 'GET', '/v1/keychain')).body;
    t.is(members.members.length, 2);
    t.like(members.installs, { used: 3, allowed: 3 });
    const paired = (await call(two, 'GET', '/v1/ledger?type=config.keychain_paired&limit=100')).body.events;
    t.is(paired.length, 2, 'each pairing recorded once');
    t.true((await call(one, 'GET', '/v1/ledger/verify')).body.ok);
  },
);
