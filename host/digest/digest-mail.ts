import type { ScheduledTask } from 'node-cron';
import type { Clock } from '../clock.ts';
import type { PeopleDirectory } from '../identity/people.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { MailService } from '../mail/mail.service.ts';
import type { Lease } from '../schedule/lease.model.ts';
import { WORK_LEASE_MS, whileRenewing } from '../passes.ts';
import { clip } from '../text.ts';
import { dayIn, scheduleDaily } from './day.ts';
import type { DigestService } from './digest.service.ts';
import type { DigestStateRepo } from './digest-state.repo.ts';
import type { DigestMailState } from './digest.model.ts';

/** The lease of one day's e-mail: `digest:<YYYY-MM-DD>` (the install's time zone). */
export const digestLease = (day: string): string => `digest:${day}`;
/**
 * The lease covers the sending only (renewed while it lasts): the day's outcome recorded in
 * `digest_state` is what says the day's e-mail went. A host that dies while sending leaves the
 * lease to run out; another host's tick then sends that day's digest (`resume`), once.
 */
const LEASE_MS = WORK_LEASE_MS;

/** What one call came to: `sent` false when it was not this process's turn (or the day's e-mail went already). */
export interface DigestMailOutcome {
  day: string;
  sent: boolean;
  ok?: boolean;
  recipients?: string[];
  failed?: Array<{ to: string; reason: string }>;
}

/** The newest signed ledger checkpoint as the e-mail carries it (the ledger area's Checkpointer.latestSigned). */
export interface SignedCheckpoint {
  seq: number;
  hash: string;
  at: string;
  signature: string;
  key: string;
}

/**
 * The e-mail's closing lines: the newest signed checkpoint, whole, so that every owner's and
 * admin's mailbox keeps a copy of the head that this machine's owner cannot take back
 * (docs/ledger.md, "Witnesses").
 */
export function checkpointLines(cp: SignedCheckpoint | null): string {
  if (cp === null) return '\n\n## Ledger checkpoint\n\nNone signed yet.\n';
  return [
    '',
    '',
    '## Ledger checkpoint',
    '',
    'The newest signed checkpoint. Keep this e-mail: `oncall ledger-verify --expect-seq <seq> --expect-hash <hash>` checks that the ledger still holds it.',
    '',
    '```',
    JSON.stringify({ seq: cp.seq, hash: cp.hash, at: cp.at, signature: cp.signature, key: cp.key }),
    '```',
    '',
  ].join('\n');
}

export interface DigestMailDeps {
  digest: Pick<DigestService, 'build'>;
  /** The newest signed checkpoint, carried at the end of the e-mail. */
  checkpoint: () => Promise<SignedCheckpoint | null>;
  people: Pick<PeopleDirectory, 'withRoles'>;
  mail: Pick<MailService, 'send'>;
  leases: {
    get(name: string): Promise<Lease | null>;
    take(name: string, holder: string, ttlMs: number, nowMs: number): Promise<boolean>;
    release(name: string, holder: string): Promise<void>;
  };
  state: DigestStateRepo;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  /** This host process's name on leases (the poller's). */
  holder: string;
  /** `HH:MM` and the IANA zone it is read in (config). */
  at: string;
  timeZone: string;
}

/**
 * The daily digest e-mail: at `digest_at` in the install's time zone (node-cron), the digest of
 * the day before that moment goes to every enabled owner and admin. Of several host processes
 * exactly one sends it: the day's lease `digest:<day>` is taken with one conditional statement
 * and held (renewed) while sending; the day's recorded outcome says it went. Each recipient's failed send is tried once more; then the outcome is
 * recorded in one transaction: `config.digest_sent` (everyone got it) or `config.digest_failed`
 * (someone did not, with why), and the `digest_state` document the doctor reads. The sends do
 * not touch the mail state of break-glass sign-in (MailService.send `signInState: false`).
 */
export class DigestMailer {
  readonly #d: DigestMailDeps;
  #task: ScheduledTask | null = null;
  #runs = new Set<Promise<unknown>>();
  /** Sends in this process run one after the other: a second call for the same day then finds the lease taken. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(deps: DigestMailDeps) {
    this.#d = { ...deps, log: deps.log.child({ component: 'digest-mail' }) };
  }

  /** Schedules the daily send (idempotent). */
  start(): void {
    if (this.#task !== null) return;
    this.#task = scheduleDaily(
      this.#d.at,
      this.#d.timeZone,
      `digest:${this.#d.holder}`,
      (due) => {
        // The day is the one the run was due on, even when the timer fired late past midnight.
        const run = this.sendFor(this.#d.clock.now(), dayIn(due, this.#d.timeZone)).catch((err: unknown) =>
          this.#d.log.error({ err }, 'the daily digest failed'),
        );
        this.#runs.add(run);
        return run.finally(() => this.#runs.delete(run));
      },
      this.#d.log,
    );
  }

  async stop(): Promise<void> {
    if (this.#task !== null) {
      await this.#task.destroy();
      this.#task = null;
    }
    await Promise.allSettled([...this.#runs]);
  }

  /**
   * Sends the digest of the day before `at` when this process wins that day's lease; what the
   * schedule calls, and tests call with a moment of the injected clock.
   */
  sendFor(at: Date, day = dayIn(at, this.#d.timeZone)): Promise<DigestMailOutcome> {
    const next = this.#queue.then(() => this.#sendFor(at, day));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #sendFor(at: Date, day: string): Promise<DigestMailOutcome> {
    const d = this.#d;
    const nowMs = at.getTime();
    const lease = await d.leases.get(digestLease(day));
    if (lease !== null && lease.until_ms > nowMs) return { day, sent: false };
    if (await this.#done(day)) return { day, sent: false };
    if (!(await d.leases.take(digestLease(day), d.holder, LEASE_MS, nowMs))) return { day, sent: false };
    try {
      // Read again under the lease: a host that sent it meanwhile recorded it before giving the lease back.
      if (await this.#done(day)) return { day, sent: false };
      return await whileRenewing(
        () => this.#send(at, day),
        () => d.leases.take(digestLease(day), d.holder, LEASE_MS, d.clock.now().getTime()),
        (err: unknown) => d.log.warn({ err }, 'could not renew the lease of the daily digest'),
      );
    } finally {
      await d.leases.release(digestLease(day), d.holder).catch((err: unknown) => d.log.warn({ err }, 'could not give back the lease of the daily digest'));
    }
  }

  /** Whether the day's e-mail went (or failed) already: its outcome is recorded. */
  async #done(day: string): Promise<boolean> {
    const last = await this.#d.state.get();
    return last !== null && last.day === day;
  }

  /**
   * The tick's call: when a day's send was begun and its lease ran out with nothing recorded (the
   * host sending it died, or stopped), this host sends that day's digest now, once.
   */
  async resume(): Promise<DigestMailOutcome | null> {
    const now = this.#d.clock.now();
    const day = dayIn(now, this.#d.timeZone);
    const lease = await this.#d.leases.get(digestLease(day));
    if (lease === null || lease.until_ms > now.getTime() || (await this.#done(day))) return null;
    this.#d.log.warn({ digest: { day, holder: lease.holder } }, 'the daily digest was begun by a host that stopped: sending it now');
    return this.sendFor(now);
  }

  async #send(at: Date, day: string): Promise<DigestMailOutcome> {
    const d = this.#d;

    const recipients = await d.people.withRoles(['owner', 'admin']);
    const failed: Array<{ to: string; reason: string }> = [];
    if (recipients.length === 0) failed.push({ to: '(nobody)', reason: 'there is no enabled owner or admin to send it to' });
    else {
      const digest = await d.digest.build(1, { at, freshLedger: true });
      const subject = `On-call digest for ${day}: ${digest.episodes.opened} episode(s) opened, ledger ${digest.ledger.ok ? 'verifies' : 'does NOT verify'}`;
      const text = digest.markdown + checkpointLines(await d.checkpoint());
      for (const to of recipients) {
        let r = await d.mail.send(to, subject, text, { signInState: false });
        if (!r.ok) {
          d.log.warn({ digest: { day, reason: r.reason } }, 'digest e-mail not sent; trying once more');
          r = await d.mail.send(to, subject, text, { signInState: false });
        }
        if (!r.ok) failed.push({ to, reason: r.reason });
      }
    }
    const ok = failed.length === 0;
    const state: DigestMailState = { day, at: d.clock.now().toISOString(), ok, recipients: recipients.length, failed };
    await d.ledger.transact(async (trx, record) => {
      await d.state.put(trx, state);
      await record(
        ok
          ? {
              type: 'config.digest_sent',
              actor: 'system',
              reason: `daily digest of ${day} sent to ${recipients.length} owner(s) and admin(s)`,
              data: { day, days: 1, recipients: recipients.length, to: recipients },
            }
          : {
              type: 'config.digest_failed',
              actor: 'system',
              reason: clip(`daily digest of ${day} not sent to ${failed.map((f) => `${f.to}: ${f.reason}`).join('; ')}`, 4000),
              data: { day, days: 1, recipients: recipients.length, to: recipients, failed },
            },
      );
    });
    if (!ok) d.log.error({ digest: { day, failed: failed.length } }, 'the daily digest e-mail failed after a retry');
    return { day, sent: true, ok, recipients, failed };
  }

  /** The last send as the doctor shows it, with when the next one is due. */
  async status(): Promise<{ last: DigestMailState | null; at: string; time_zone: string }> {
    return { last: await this.#d.state.get(), at: this.#d.at, time_zone: this.#d.timeZone };
  }
}
