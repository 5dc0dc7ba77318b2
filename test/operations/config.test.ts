import path from 'node:path';
import test from 'ava';
import { ConfigError, loadConfig } from '../../host/config.ts';

test('with no environment the defaults are port 8700, ./data, SQLite, no ingest token', (t) => {
  const c = loadConfig({}, '/srv/app');
  t.like(c, {
    port: 8700,
    dataDir: path.resolve('/srv/app', 'data'),
    databaseUrl: null,
    adminToken: null,
    ingestToken: null,
    licenceCheck: 'auto',
    debounceS: 20,
    discoverTimeoutS: 45,
    databaseTimeoutS: 10,
    logLevel: 'info',
  });
  t.true(Object.isFrozen(c));
});

test('every SERVICE_ variable is read', (t) => {
  const c = loadConfig(
    {
      SERVICE_PORT: '9000',
      SERVICE_DATA_DIR: 'var',
      SERVICE_DATABASE_URL: 'mysql://u:p@db:3306/x',
      SERVICE_ADMIN_TOKEN: 'a'.repeat(32),
      SERVICE_INGEST_TOKEN: 'i'.repeat(32),
      SERVICE_CONFIG_DIR: '/etc/oncall',
      SERVICE_PLUGINS_DIR: '/opt/plugins',
      SERVICE_SECRET_KEY: 's'.repeat(32),
      SERVICE_LICENCE_CHECK: 'offline',
      SERVICE_LICENCE_PUBKEY: 'k',
      SERVICE_DISCOVER_TIMEOUT_S: '10',
      SERVICE_DATABASE_TIMEOUT_S: '4',
      SERVICE_DEBOUNCE_S: '0',
      SERVICE_LOG_LEVEL: 'warn',
    },
    '/srv/app',
  );
  t.like(c, {
    port: 9000,
    dataDir: '/srv/app/var',
    databaseUrl: 'mysql://u:p@db:3306/x',
    configDir: '/etc/oncall',
    pluginsDir: '/opt/plugins',
    licenceCheck: 'offline',
    discoverTimeoutS: 10,
    databaseTimeoutS: 4,
    debounceS: 0,
    logLevel: 'warn',
  });
});

test('bad values are refused together, each named', (t) => {
  const err = t.throws(
    () =>
      loadConfig({
        SERVICE_PORT: 'eighty',
        SERVICE_DATABASE_URL: 'postgres://x',
        SERVICE_ADMIN_TOKEN: 'short',
        SERVICE_LICENCE_CHECK: 'sometimes',
        SERVICE_LOG_LEVEL: 'loud',
      }),
    { instanceOf: ConfigError },
  );
  const text = err!.problems.join('\n');
  for (const name of ['SERVICE_PORT', 'SERVICE_DATABASE_URL', 'SERVICE_ADMIN_TOKEN', 'SERVICE_LICENCE_CHECK', 'SERVICE_LOG_LEVEL'])
    t.true(text.includes(name), name);
  t.false(text.includes('short'), 'a bad token value is never echoed');
});

test('the admin and ingest tokens must differ', (t) => {
  t.throws(() => loadConfig({ SERVICE_ADMIN_TOKEN: 'x'.repeat(40), SERVICE_INGEST_TOKEN: 'x'.repeat(40) }), { instanceOf: ConfigError });
});

test('SERVICE_PUBLIC_URL is the console address notifications link to, without a trailing slash; a query or another scheme is refused', (t) => {
  t.is(loadConfig({}).publicUrl, null);
  t.is(loadConfig({ SERVICE_PUBLIC_URL: 'https://oncall.bank.example/' }).publicUrl, 'https://oncall.bank.example');
  for (const bad of ['ftp://oncall.bank.example', 'https://oncall.bank.example/?x=1', 'oncall.bank.example']) {
    const err = t.throws(() => loadConfig({ SERVICE_PUBLIC_URL: bad }), { instanceOf: ConfigError }, bad);
    t.regex(err!.problems.join('\n'), /SERVICE_PUBLIC_URL/);
  }
});

test('the daily digest: SERVICE_DIGEST_AT (HH:MM, 08:00 by default) and SERVICE_TIME_ZONE (IANA, the host’s by default)', (t) => {
  const d = loadConfig({}, '/srv/app');
  t.is(d.digestAt, '08:00');
  // Unset: the host's own, resolved by the digest when it needs it (not at every start of the CLI).
  t.is(d.timeZone, null);
  t.like(loadConfig({ SERVICE_DIGEST_AT: '23:59', SERVICE_TIME_ZONE: 'Europe/Zurich' }), { digestAt: '23:59', timeZone: 'Europe/Zurich' });
  for (const bad of ['8:00', '24:00', '07:60', '0800', 'noon']) {
    const e = t.throws(() => loadConfig({ SERVICE_DIGEST_AT: bad }), { instanceOf: ConfigError });
    t.true(
      e.problems.some((p) => p.startsWith('SERVICE_DIGEST_AT must be a time of day as HH:MM')),
      bad,
    );
  }
  const e = t.throws(() => loadConfig({ SERVICE_TIME_ZONE: 'Mars/Olympus' }), { instanceOf: ConfigError });
  t.true(e.problems.some((p) => p.startsWith('SERVICE_TIME_ZONE must be an IANA time zone')));
});

test('SERVICE_METRICS_TOKEN turns GET /metrics on: 32 characters at least, and neither the admin nor the ingest token', (t) => {
  t.is(loadConfig({}).metricsToken, null);
  t.is(loadConfig({ SERVICE_METRICS_TOKEN: 'm'.repeat(32) }).metricsToken, 'm'.repeat(32));
  for (const env of [
    { SERVICE_METRICS_TOKEN: 'short' },
    { SERVICE_METRICS_TOKEN: 'a'.repeat(40), SERVICE_ADMIN_TOKEN: 'a'.repeat(40) },
    { SERVICE_METRICS_TOKEN: 'i'.repeat(40), SERVICE_INGEST_TOKEN: 'i'.repeat(40) },
  ]) {
    const e = t.throws(() => loadConfig(env), { instanceOf: ConfigError });
    t.true(e.problems.some((p) => p.startsWith('SERVICE_METRICS_TOKEN')));
  }
});

test('SERVICE_TLS_CERT and SERVICE_TLS_KEY go together, resolved against the working directory', (t) => {
  t.is(loadConfig({}).tls, null);
  t.deepEqual(loadConfig({ SERVICE_TLS_CERT: 'tls/cert.pem', SERVICE_TLS_KEY: '/etc/oncall/key.pem' }, '/srv/app').tls, {
    certFile: '/srv/app/tls/cert.pem',
    keyFile: '/etc/oncall/key.pem',
  });
  for (const env of [{ SERVICE_TLS_CERT: '/c.pem' }, { SERVICE_TLS_KEY: '/k.pem' }]) {
    const e = t.throws(() => loadConfig(env), { instanceOf: ConfigError });
    t.true(e.problems.some((p) => p.startsWith('SERVICE_TLS_CERT and SERVICE_TLS_KEY go together')));
  }
});
