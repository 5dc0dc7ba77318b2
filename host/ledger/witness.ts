import { createSocket } from 'node:dgram';
import { hostname } from 'node:os';
import net from 'node:net';
import type { Logger } from '../log.ts';
import type { FileCheckpoint } from './checkpoints.ts';

/**
 * Where signed checkpoints are sent so that a copy is out of reach of whoever controls this
 * machine (as Certificate Transparency witnesses keep tree heads): `SERVICE_LEDGER_WITNESS`, a
 * comma-separated list of
 * - `https://…` or `http://…`: each checkpoint POSTed as JSON (a webhook target);
 * - `syslog://host[:port]` (UDP, port 514) or `syslog+tcp://host[:port]` (TCP, octet counting,
 *   RFC 6587), as one RFC 5424 message, facility log audit (13), severity notice.
 */
export type WitnessTarget =
  { kind: 'webhook'; url: string; shown: string } | { kind: 'syslog'; transport: 'udp' | 'tcp'; host: string; port: number; shown: string };

/** The targets of SERVICE_LEDGER_WITNESS, or what is wrong with it. */
export function parseWitnesses(text: string | null): { targets: WitnessTarget[]; problems: string[] } {
  const targets: WitnessTarget[] = [];
  const problems: string[] = [];
  for (const raw of (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')) {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      problems.push(`SERVICE_LEDGER_WITNESS: "${raw.slice(0, 80)}" is not an address (https://…, syslog://host:port or syslog+tcp://host:port)`);
      continue;
    }
    // Shown (in logs) as its origin only: a webhook's path or query may carry its token.
    if (u.protocol === 'https:' || u.protocol === 'http:') targets.push({ kind: 'webhook', url: u.toString(), shown: u.origin });
    else if ((u.protocol === 'syslog:' || u.protocol === 'syslog+tcp:') && u.hostname !== '')
      targets.push({
        kind: 'syslog',
        transport: u.protocol === 'syslog:' ? 'udp' : 'tcp',
        host: u.hostname.replace(/^\[|\]$/g, ''),
        port: u.port === '' ? 514 : Number(u.port),
        shown: `${u.protocol}//${u.host}`,
      });
    else problems.push(`SERVICE_LEDGER_WITNESS: "${u.protocol}" is not a witness kind (https://, http://, syslog://, syslog+tcp://)`);
  }
  return { targets, problems };
}

const TIMEOUT_MS = 10_000;
/** RFC 5424 PRI: facility 13 (log audit), severity 5 (notice). */
const PRI = 13 * 8 + 5;

/** The body a webhook witness gets; also the JSON after `ledger checkpoint ` in a syslog message. */
export function witnessBody(cp: FileCheckpoint): { type: 'ledger.checkpoint'; checkpoint: FileCheckpoint } {
  return { type: 'ledger.checkpoint', checkpoint: { seq: cp.seq, hash: cp.hash, at: cp.at, signature: cp.signature, key: cp.key } };
}

/** One RFC 5424 message carrying the checkpoint (MSGID `checkpoint`, the JSON as MSG). */
export function syslogMessage(cp: FileCheckpoint): string {
  return `<${PRI}>1 ${cp.at} ${hostname() || '-'} oncall ${process.pid} checkpoint - ledger checkpoint ${JSON.stringify(witnessBody(cp))}`;
}

/**
 * Sends each checkpoint to every configured witness. Never throws and never holds up the
 * ledger: a failed send is logged (the target shown as its origin only) and tried
 * again with the latest checkpoint on the next tick (`retry`); a later checkpoint vouches for
 * every earlier one, so the witness missing one in between loses nothing.
 */
export class Witness {
  readonly targets: readonly WitnessTarget[];
  readonly #log: Logger;
  /** Per target: the seq last delivered, and whether the last try failed. */
  readonly #state = new Map<WitnessTarget, { seq: number; failing: boolean }>();

  constructor(deps: { targets: readonly WitnessTarget[]; log: Logger }) {
    this.targets = deps.targets;
    this.#log = deps.log.child({ component: 'ledger-witness' });
  }

  /** Whether a witness is configured, and how each one fares (for the doctor and the docs). */
  status(): Array<{ target: string; delivered_seq: number | null; failing: boolean }> {
    return this.targets.map((t) => ({ target: t.shown, delivered_seq: this.#state.get(t)?.seq ?? null, failing: this.#state.get(t)?.failing ?? false }));
  }

  /** Sends `cp` to every target that has not had it (or a later one). */
  async send(cp: FileCheckpoint): Promise<void> {
    await Promise.all(
      this.targets.map(async (t) => {
        const s = this.#state.get(t);
        if (s !== undefined && s.seq >= cp.seq && !s.failing) return;
        try {
          await deliver(t, cp);
          this.#state.set(t, { seq: Math.max(cp.seq, s?.seq ?? 0), failing: false });
        } catch (e) {
          this.#state.set(t, { seq: s?.seq ?? 0, failing: true });
          this.#log.warn(
            { witness: t.shown, seq: cp.seq, problem: e instanceof Error ? e.message.slice(0, 300) : String(e) },
            'ledger checkpoint not delivered to its witness',
          );
        }
      }),
    );
  }

  /** The tick: the latest checkpoint to each target that has not had it. */
  async retry(latest: FileCheckpoint | null): Promise<void> {
    if (latest !== null && this.targets.length > 0) await this.send(latest);
  }
}

async function deliver(t: WitnessTarget, cp: FileCheckpoint): Promise<void> {
  if (t.kind === 'webhook') {
    const res = await fetch(t.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(witnessBody(cp)),
      redirect: 'manual',
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    await res.arrayBuffer().catch(() => undefined);
    if (res.status < 200 || res.status >= 300) throw new Error(`HTTP ${res.status} from ${t.shown}`);
    return;
  }
  const message = syslogMessage(cp);
  if (t.transport === 'udp') {
    const socket = createSocket(net.isIPv6(t.host) ? 'udp6' : 'udp4');
    try {
      await new Promise<void>((resolve, reject) => socket.send(Buffer.from(message, 'utf8'), t.port, t.host, (err) => (err ? reject(err) : resolve())));
    } finally {
      socket.close();
    }
    return;
  }
  await new Promise<void>((resolve, reject) => {
    const framed = `${Buffer.byteLength(message, 'utf8')} ${message}`;
    const socket = net.connect({ host: t.host, port: t.port, timeout: TIMEOUT_MS });
    socket.once('connect', () => socket.end(framed, 'utf8'));
    socket.once('timeout', () => socket.destroy(new Error(`no answer from ${t.shown} within ${TIMEOUT_MS / 1000} s`)));
    socket.once('error', reject);
    socket.once('close', (hadError) => (hadError ? undefined : resolve()));
  });
}
