import net from 'node:net';
import path from 'node:path';
import { parseWitnesses, type WitnessTarget } from './ledger/witness.ts';

/** Everything the service reads from its environment, read once and frozen. */
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  /** `mysql://…` to use MySQL/MariaDB; null means the embedded SQLite file in `dataDir`. */
  readonly databaseUrl: string | null;
  readonly adminToken: string | null;
  readonly ingestToken: string | null;
  /** The bearer token GET /metrics takes (Prometheus's); null: /metrics is off (404). */
  readonly metricsToken: string | null;
  /** PEM files of the certificate (chain) and its key: HTTPS on the same port, re-read when they change; null: plain HTTP. */
  readonly tls: { readonly certFile: string; readonly keyFile: string } | null;
  readonly configDir: string | null;
  readonly pluginsDir: string | null;
  readonly secretKey: string | null;
  readonly licenceCheck: 'auto' | 'strict' | 'offline';
  readonly licencePublicKey: string | null;
  readonly discoverTimeoutS: number;
  /** MySQL/MariaDB: a statement, a connection being made, or one waited for from the pool fails after this (a frozen database answers 503, not never). */
  readonly databaseTimeoutS: number;
  readonly debounceS: number;
  /** New episodes a minute one source may open for services the estate does not have; beyond, its storm episode (host/episodes/storm.ts). */
  readonly stormPerSource: number;
  /** New episodes a minute for one service the estate does not have; beyond, the source's storm episode. */
  readonly stormPerService: number;
  readonly logLevel: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
  /** Proxies whose X-Forwarded-For is believed (addresses or CIDR blocks); empty: none. */
  readonly trustedProxies: readonly string[];
  /** Base address of the Resend-compatible mail API. */
  readonly mailApiUrl: string;
  /** PEM file of extra certificate authorities trusted for SMTP TLS (an internal relay's CA). */
  readonly mailCaFile: string | null;
  /** Base address of the vendor's licence server for the 6-hourly confirmation; null: nothing is asked. */
  readonly licenceServer: string | null;
  /** The console's address as people reach it (links in notifications); null: messages carry no link. */
  readonly publicUrl: string | null;
  /** When the daily digest e-mail goes out, `HH:MM` (24-hour) in `timeZone`; default 08:00. */
  readonly digestAt: string;
  /**
   * The install's time zone (IANA name) for the digest's hour and day; null: the host's own,
   * resolved by the digest when it needs it (resolving loads ICU's zone data, 8 MB that
   * `oncall ledger-verify` and the other CLI commands need not carry).
   */
  readonly timeZone: string | null;
  /** Connections held at once (lowered to keep a reserve of descriptors: host/http/connections.ts). */
  readonly maxConnections: number;
  /** Connections one peer address holds at once (trusted proxies excepted). */
  readonly maxConnectionsPerClient: number;
  /** SERVICE_LEDGER_WITNESS: where each signed ledger checkpoint is also sent (docs/ledger.md); empty: nowhere. */
  readonly ledgerWitnesses: readonly WitnessTarget[];
}

export class ConfigError extends Error {
  readonly problems: string[];

  constructor(problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
    this.problems = problems;
  }
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
const LICENCE_CHECKS = ['auto', 'strict', 'offline'] as const;

/** Reads and validates the `SERVICE_*` variables; throws ConfigError naming every bad one. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  const problems: string[] = [];
  const text = (name: string): string | null => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? null : v.trim();
  };
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const v = text(name);
    if (v === null) return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max}`);
      return fallback;
    }
    return n;
  };
  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const v = text(name);
    if (v === null) return fallback;
    if (!(allowed as readonly string[]).includes(v)) {
      problems.push(`${name} must be one of ${allowed.join(', ')}`);
      return fallback;
    }
    return v as T;
  };
  const dir = (name: string): string | null => {
    const v = text(name);
    return v === null ? null : path.resolve(cwd, v);
  };

  const databaseUrl = text('SERVICE_DATABASE_URL');
  if (databaseUrl !== null && !/^mysql2?:\/\//.test(databaseUrl)) {
    problems.push('SERVICE_DATABASE_URL must start with mysql:// (leave it unset for the embedded SQLite)');
  }
  const adminToken = text('SERVICE_ADMIN_TOKEN');
  if (adminToken !== null && adminToken.length < 32) problems.push('SERVICE_ADMIN_TOKEN must be at least 32 characters');
  const ingestToken = text('SERVICE_INGEST_TOKEN');
  if (ingestToken !== null && ingestToken.length < 32) problems.push('SERVICE_INGEST_TOKEN must be at least 32 characters');
  if (adminToken !== null && adminToken === ingestToken) problems.push('SERVICE_ADMIN_TOKEN and SERVICE_INGEST_TOKEN must differ');
  const metricsToken = text('SERVICE_METRICS_TOKEN');
  if (metricsToken !== null && metricsToken.length < 32) problems.push('SERVICE_METRICS_TOKEN must be at least 32 characters');
  if (metricsToken !== null && (metricsToken === adminToken || metricsToken === ingestToken))
    problems.push('SERVICE_METRICS_TOKEN must differ from SERVICE_ADMIN_TOKEN and SERVICE_INGEST_TOKEN');
  const certFile = dir('SERVICE_TLS_CERT');
  const keyFile = dir('SERVICE_TLS_KEY');
  if ((certFile === null) !== (keyFile === null)) problems.push('SERVICE_TLS_CERT and SERVICE_TLS_KEY go together: set both (PEM files) or neither');
  const secretKey = text('SERVICE_SECRET_KEY');
  if (secretKey !== null && secretKey.length < 32) problems.push('SERVICE_SECRET_KEY must be at least 32 characters');

  const trustedProxies = (text('SERVICE_TRUSTED_PROXIES') ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  for (const p of trustedProxies) {
    const [addr, bits, extra] = p.split('/');
    if (extra !== undefined || net.isIP(addr ?? '') === 0 || (bits !== undefined && !/^\d{1,3}$/.test(bits)))
      problems.push(`SERVICE_TRUSTED_PROXIES: "${p}" is not an address or CIDR block`);
  }
  const mailApiUrl = text('SERVICE_MAIL_API_URL') ?? 'https://api.resend.com';
  if (!/^https?:\/\/[^\s]+$/.test(mailApiUrl)) problems.push('SERVICE_MAIL_API_URL must be an http(s) address');

  const licenceServer = text('SERVICE_LICENCE_SERVER');
  if (licenceServer !== null && !/^https?:\/\/[^\s]+$/.test(licenceServer)) problems.push('SERVICE_LICENCE_SERVER must be an http(s) address');
  if (licenceServer === null && text('SERVICE_LICENCE_CHECK') === 'strict')
    problems.push('SERVICE_LICENCE_CHECK=strict needs SERVICE_LICENCE_SERVER (the licence server to confirm with)');

  const publicUrl = text('SERVICE_PUBLIC_URL');
  if (publicUrl !== null && !/^https?:\/\/[^\s?#]+$/.test(publicUrl)) problems.push('SERVICE_PUBLIC_URL must be an http(s) address without query or fragment');

  const digestAt = text('SERVICE_DIGEST_AT') ?? '08:00';
  if (!/^([01]\d|2[0-3]):[0-5]\d$/.test(digestAt)) problems.push('SERVICE_DIGEST_AT must be a time of day as HH:MM (24-hour, e.g. 08:00)');
  const timeZone = text('SERVICE_TIME_ZONE') ?? null;
  if (timeZone !== null && !validTimeZone(timeZone)) problems.push(`SERVICE_TIME_ZONE must be an IANA time zone such as Europe/Zurich or UTC`);

  const witnesses = parseWitnesses(text('SERVICE_LEDGER_WITNESS'));
  problems.push(...witnesses.problems);

  const config: Config = {
    port: int('SERVICE_PORT', 8700, 0, 65535),
    host: text('SERVICE_HOST') ?? '0.0.0.0',
    dataDir: dir('SERVICE_DATA_DIR') ?? path.resolve(cwd, 'data'),
    databaseUrl,
    adminToken,
    ingestToken,
    metricsToken,
    tls: certFile !== null && keyFile !== null ? Object.freeze({ certFile, keyFile }) : null,
    configDir: dir('SERVICE_CONFIG_DIR'),
    pluginsDir: dir('SERVICE_PLUGINS_DIR'),
    secretKey,
    licenceCheck: oneOf('SERVICE_LICENCE_CHECK', LICENCE_CHECKS, 'auto'),
    licencePublicKey: text('SERVICE_LICENCE_PUBKEY'),
    discoverTimeoutS: int('SERVICE_DISCOVER_TIMEOUT_S', 45, 1, 3600),
    databaseTimeoutS: int('SERVICE_DATABASE_TIMEOUT_S', 10, 1, 600),
    debounceS: int('SERVICE_DEBOUNCE_S', 20, 0, 3600),
    stormPerSource: int('SERVICE_STORM_PER_SOURCE', 20, 1, 10_000),
    stormPerService: int('SERVICE_STORM_PER_SERVICE', 2, 1, 1000),
    logLevel: oneOf('SERVICE_LOG_LEVEL', LOG_LEVELS, 'info'),
    trustedProxies: Object.freeze(trustedProxies),
    mailApiUrl: mailApiUrl.replace(/\/+$/, ''),
    mailCaFile: dir('SERVICE_MAIL_CA_FILE'),
    licenceServer: licenceServer === null ? null : licenceServer.replace(/\/+$/, ''),
    publicUrl: publicUrl === null ? null : publicUrl.replace(/\/+$/, ''),
    digestAt,
    timeZone,
    maxConnections: int('SERVICE_MAX_CONNECTIONS', 4096, 16, 1_000_000),
    maxConnectionsPerClient: int('SERVICE_MAX_CONNECTIONS_PER_CLIENT', 256, 1, 1_000_000),
    ledgerWitnesses: Object.freeze(witnesses.targets),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

function validTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
