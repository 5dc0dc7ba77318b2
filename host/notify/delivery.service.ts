import { HOUR, MINUTE, SECOND, type Clock } from '../clock.ts';
import type { EpisodeOutcomes } from '../episodes/episode-outcomes.ts';
import type { OutcomeDetail } from '../episodes/episode.model.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { NotifyMessage } from '../plugins/contract.ts';
import type { Trx } from '../storage/db.ts';
import { holderName, Passes, WORK_LEASE_MS, whileRenewing } from '../passes.ts';
import { coalescedMail } from './coalesce.ts';
import type { NotifySettingsRepo } from './notify-settings.repo.ts';
import type { ChannelKind, ChannelState, Delivery, OutboxRepo } from './outbox.repo.ts';

/** The first retry waits this long; each later one twice as long as the one before. */
export const FIRST_RETRY_MS = 30 * SECOND;
/** A delivery is given up only once it has failed for at least this long. */
export const GIVE_UP_AFTER_MS = HOUR;
/** How long one host holds a delivery it is sending (longer than any send may take). */
export const LEASE_MS = WORK_LEASE_MS;
/** Due deliveries read per round: the most urgent first (outbox `priority`). */
const BATCH = 500;
/** Recipients and targets sent to at once, each on its own lane: a slow one holds up no other. */
const MAX_LANES = 16;
/** Messages one target's lane sends per round, one after another (a target takes one message per incident event). */
const TARGET_ROUND = 5;
/** Messages one e-mail may gather for one person. */
const MAIL_GATHERS = 500;
/**
 * A person gets at most one e-mail in this time: what falls due meanwhile waits and goes in the
 * next one, gathered. A critical message does not wait (it takes whatever else is due with it).
 */
export const PERSON_GAP_MS = 30 * SECOND;
/** How soon after a nudge the worker runs (nudges meanwhile share the run). */
const NUDGE_MS = 50;

/** The wait before attempt `n + 1` after attempt `n` failed: 30 s, 1, 2, 4, 8, 16, 32 minutes... */
export function retryDelayMs(attempts: number): number {
  return FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1);
}

export interface DeliveryDeps {
  outbox: OutboxRepo;
  settings: NotifySettingsRepo;
  /** The episodes area's outcomes (it alone touches `episodes`). */
  episodes: EpisodeOutcomes;
  /** Sends one e-mail (the MailService): never throws, answers why not. */
  mail: { send(to: string, subject: string, text: string, opts: { signInState: false }): Promise<{ ok: true } | { ok: false; reason: string }> };
  /** Delivers through a notification target (the ConnectorService): never throws. */
  targets: { notify(name: string, message: NotifyMessage): Promise<{ ok: boolean; problem: string | null; kind: string | null }> };
  ledger: Ledger;
  clock: Clock;
  log: Logger;
}

/** How delivery goes: GET /v1/notifications, the doctor and the Home page read it. */
export interface NotifyStatus {
  recipients: string[];
  targets: string[];
  /** Null when somebody is set to be told; else why nobody would be. */
  nobody: string | null;
  /** Messages waiting to be delivered (first attempt or retry). */
  pending: number;
  /** The last attempt to reach each configured recipient and target (null: never tried yet). */
  channels: Array<{ channel_kind: ChannelKind; name: string; state: ChannelState | null }>;
  /** Configured recipients and targets whose last attempt failed. */
  problems: Array<{ channel_kind: ChannelKind; name: string; problem: string; at: string }>;
}

const WITH_DIAGNOSIS = 'escalated to people with the diagnosis';
const WITHOUT_DIAGNOSIS = 'escalated to people without a diagnosis';

/**
 * The delivery worker: takes due messages from the outbox under a lease (so two host processes
 * never send one twice), sends them, and records each attempt: `outcome.notified` on success,
 * `outcome.notify_attempt_failed` with the next attempt's time on failure, and
 * `outcome.notify_failed` when a message has failed for an hour. The first message delivered
 * about an incident's opening or escalation makes the episode's outcome `escalated`, saying who
 * was told and how. Runs on the app's tick and soon after a nudge.
 */
export class NotifyDelivery {
  readonly #d: DeliveryDeps;
  /** This process's name on the leases it takes. */
  readonly holder = holderName('notify');
  readonly #passes: Passes;

  constructor(deps: DeliveryDeps) {
    this.#d = deps;
    this.#passes = new Passes(
      () => this.#pass(),
      (err: unknown) => this.#d.log.error({ err, component: 'notify' }, 'delivering notifications failed'),
      NUDGE_MS,
    );
  }

  /** Asks for a run soon; many nudges in a row make one run. */
  nudge(): void {
    this.#passes.nudge();
  }

  /** One pass over the due messages; passes of this process never overlap. */
  run(): Promise<void> {
    return this.#passes.run();
  }

  async stop(): Promise<void> {
    await this.#passes.stop();
  }

  /**
   * Gives back the deliveries this process claimed and has not recorded (shutdown), or with
   * `everyHolder` those of any process (the start of the only host on SQLite): any host's next
   * run sends them.
   */
  release(everyHolder = false): Promise<number> {
    return this.#d.outbox.release(everyHolder ? null : this.holder);
  }

  async status(): Promise<NotifyStatus> {
    const [settings, pending, states] = await Promise.all([this.#d.settings.get(), this.#d.outbox.pending(), this.#d.outbox.channels()]);
    const byKey = new Map(states.map((s) => [`${s.channel_kind}:${s.name}`, s]));
    const channels = [
      ...settings.recipients.map((name) => ({ channel_kind: 'email' as const, name, state: byKey.get(`email:${name}`) ?? null })),
      ...settings.targets.map((name) => ({ channel_kind: 'target' as const, name, state: byKey.get(`target:${name}`) ?? null })),
    ];
    const problems = channels
      .filter((c) => c.state !== null && !c.state.ok)
      .map((c) => ({ channel_kind: c.channel_kind, name: c.name, problem: c.state!.last_problem ?? 'the last attempt failed', at: c.state!.last_attempt_at }));
    const nobody = channels.length === 0 ? 'no on-call recipients or targets are set' : null;
    return { recipients: settings.recipients, targets: settings.targets, nobody, pending, channels, problems };
  }

  /**
   * Rounds over the due messages, the most urgent first: each recipient and target is a lane of
   * its own, up to MAX_LANES at once, so a slow SMTP relay never holds up a webhook. A person's
   * due e-mails go as one (coalesced), at most one per PERSON_GAP_MS unless one is critical; a
   * target's are sent one after another, TARGET_ROUND per round.
   */
  async #pass(): Promise<void> {
    for (;;) {
      const now = this.#d.clock.now().getTime();
      const due = await this.#d.outbox.due(now, BATCH);
      const lanes = new Map<string, Delivery[]>();
      for (const d of due) {
        const key = `${d.channel_kind}:${d.channel}`;
        const lane = lanes.get(key);
        if (lane === undefined) lanes.set(key, [d]);
        else lane.push(d);
      }
      const queue = [...lanes.values()];
      let sent = 0;
      const worker = async (): Promise<void> => {
        for (let lane = queue.shift(); lane !== undefined; lane = queue.shift()) sent += await this.#lane(lane, now);
      };
      await Promise.all(Array.from({ length: Math.min(MAX_LANES, queue.length) }, worker));
      // Another round while anything went: a target sends TARGET_ROUND per round, the rest wait their turn.
      if (sent === 0) return;
    }
  }

  /** One recipient's or target's due messages, most urgent first; answers how many were sent (or tried). */
  async #lane(lane: Delivery[], now: number): Promise<number> {
    const first = lane[0]!;
    if (first.channel_kind === 'target') {
      let n = 0;
      for (const d of lane.slice(0, TARGET_ROUND)) {
        if (!(await this.#d.outbox.claim(d.id, this.holder, now, now + LEASE_MS))) continue;
        await this.#send([d]);
        n++;
      }
      return n;
    }
    const gathered = lane.slice(0, MAIL_GATHERS);
    const critical = gathered.some((d) => d.episode.severity === 'critical');
    if (!critical) {
      const last = (await this.#d.outbox.channel(null, 'email', first.channel))?.last_ok_at ?? null;
      const lastMs = last === null ? -Infinity : Date.parse(last);
      if (now - lastMs < PERSON_GAP_MS) {
        await this.#d.outbox.defer(
          gathered.map((d) => d.id),
          now,
          lastMs + PERSON_GAP_MS,
        );
        return 0;
      }
    }
    const mine: Delivery[] = [];
    for (const d of gathered) if (await this.#d.outbox.claim(d.id, this.holder, now, now + LEASE_MS)) mine.push(d);
    // A critical e-mail takes along what pacing held back for the person.
    if (critical && mine.length > 0)
      for (const d of await this.#d.outbox.heldBack('email', first.channel, now, now + PERSON_GAP_MS, MAIL_GATHERS - mine.length))
        if (await this.#d.outbox.claimEarly(d.id, this.holder, now, now + LEASE_MS)) mine.push(d);
    if (mine.length > 0) await this.#send(mine);
    return mine.length;
  }

  /** The sending itself: one message to a target, or one e-mail gathering `ds`; says how it went. */
  async #attempt(ds: Delivery[]): Promise<{ ok: boolean; problem: string | null; how: string }> {
    const d = ds[0]!;
    const sentAt = this.#d.clock.now().toISOString();
    if (d.channel_kind === 'email') {
      const { subject, text } = coalescedMail(ds.map((x) => ({ event: x.event, episode: x.episode, sent_at: sentAt })));
      // An incident e-mail that fails (a refused recipient, say) says nothing about whether sign-in
      // codes can be sent: it leaves break-glass sign-in as it is (docs/mail.md, "Break-glass state").
      const r = await this.#d.mail.send(d.channel, subject, text, { signInState: false });
      return { ok: r.ok, problem: r.ok ? null : `the e-mail was not sent: ${r.reason}`, how: 'e-mail' };
    }
    const r = await this.#d.targets.notify(d.channel, { event: d.event, episode: d.episode, sent_at: sentAt });
    return { ok: r.ok, problem: r.problem, how: r.kind ?? 'unknown kind' };
  }

  /** Sends one message to a target, or one e-mail gathering `ds` (all to one person), and records each. */
  async #send(ds: Delivery[]): Promise<void> {
    let ok = false;
    let problem: string | null = null;
    let how = 'e-mail';
    // The leases of what is being sent are renewed while the relay or target answers.
    const ids = ds.map((x) => x.id);
    try {
      ({ ok, problem, how } = await whileRenewing(
        () => this.#attempt(ds),
        () => this.#d.outbox.renew(this.holder, ids, this.#d.clock.now().getTime() + LEASE_MS),
        (err: unknown) => this.#d.log.warn({ err, component: 'notify' }, 'could not renew the leases of notifications being sent'),
      ));
    } catch (e) {
      problem = `unexpected error: ${e instanceof Error ? e.message : String(e)}`;
    }
    for (const x of ds) {
      if (!ok)
        this.#d.log.warn(
          { component: 'notify', delivery: x.id, episode: x.episode_id, event: x.event, channel: x.channel_kind, to: x.channel, attempt: x.attempts + 1 },
          problem ?? 'failed without a reason',
        );
      try {
        await this.#finish(x, ok, problem ?? 'failed without a reason', how, ds.length);
      } catch (err) {
        // The lease runs out and the message is tried again: at least once, never lost.
        this.#d.log.error({ err, component: 'notify', delivery: x.id }, 'could not record a notification attempt');
      }
    }
  }

  async #finish(d: Delivery, ok: boolean, problem: string, how: string, gathered = 1): Promise<void> {
    const { outbox, ledger, clock } = this.#d;
    const now = clock.now();
    const at = now.toISOString();
    const attempts = d.attempts + 1;
    const who = {
      episode: d.episode_id,
      event: d.event,
      channel: d.channel_kind,
      to: d.channel,
      kind: d.channel_kind === 'email' ? 'email' : how,
      attempt: attempts,
      // One e-mail carried this many messages to the person.
      ...(gathered > 1 ? { gathered } : {}),
    };
    const label = d.channel_kind === 'email' ? `${d.channel} by e-mail` : `${d.channel} (${how})`;
    await ledger.transact(
      async (trx, record) => {
        // Another host took the message over after this one's lease ran out: it records the outcome.
        if ((await outbox.held(trx, d.id, this.holder)) === null) return;
        const before = await outbox.channel(trx, d.channel_kind, d.channel);
        if (ok) {
          await outbox.finish(trx, d.id, 'sent', attempts, null, at);
          await outbox.putChannel(trx, { channel_kind: d.channel_kind, name: d.channel, ok: true, last_problem: null, last_attempt_at: at, last_ok_at: at });
          // A close or an approval request (or its withdrawal) tells nobody of the incident as such: no escalation.
          const escalated = d.event === 'incident.closed' || d.event.startsWith('incident.approval_') ? false : await this.#told(trx, d, how, at);
          await record({
            type: 'outcome.notified',
            actor: 'system',
            reason: `${d.event}: told ${label}`,
            trace: d.episode_id,
            data: { ...who, ...(escalated ? { episode_outcome: 'escalated' } : {}) },
          });
          return;
        }
        await outbox.putChannel(trx, {
          channel_kind: d.channel_kind,
          name: d.channel,
          ok: false,
          last_problem: problem,
          last_attempt_at: at,
          last_ok_at: before?.last_ok_at ?? null,
        });
        if (now.getTime() - d.created_ms >= GIVE_UP_AFTER_MS) {
          await outbox.finish(trx, d.id, 'failed', attempts, problem, at);
          const minutes = Math.round((now.getTime() - d.created_ms) / MINUTE);
          await record({
            type: 'outcome.notify_failed',
            actor: 'system',
            reason: `${d.event}: could not tell ${label} after ${attempts} attempts over ${minutes} min: ${problem}`.slice(0, 4000),
            trace: d.episode_id,
            data: { ...who, attempts, problem, since: d.created_at },
          });
          if (d.event !== 'incident.closed') await this.#gaveUp(trx, d, label, problem, attempts, minutes, at);
          return;
        }
        const nextMs = now.getTime() + retryDelayMs(attempts);
        await outbox.retryAt(trx, d.id, attempts, problem, nextMs);
        // One event per change of state, not per attempt: the first failure, and a failure for
        // another reason than the last one. A retry that fails as the last one did is in the
        // outbox row (attempts, next time), the log and, at the end, in outcome.notified or
        // outcome.notify_failed (with the number of attempts); the ledger already says it.
        if (attempts > 1 && d.last_problem === problem) return;
        await record({
          type: 'outcome.notify_attempt_failed',
          actor: 'system',
          reason: `${d.event}: attempt ${attempts} to tell ${label} failed: ${problem}`.slice(0, 4000),
          trace: d.episode_id,
          data: { ...who, problem, next_at: new Date(nextMs).toISOString() },
        });
      },
      { headFirst: true },
    );
  }

  /** Makes the episode's outcome `escalated` (first delivery) or adds who else was told; answers whether it changed to escalated now. */
  async #told(trx: Trx, d: Delivery, how: string, at: string): Promise<boolean> {
    const episode = await this.#d.episodes.lock(trx, d.episode_id);
    // A mitigated episode stays mitigated: people told of its opening saw it fixed. A notice pages
    // nobody, so it is never escalated (docs/notifications.md). One whose action is being verified
    // stays `verifying` until the verification says (acting ends it).
    if (episode === null || episode.outcome === 'mitigated' || episode.kind === 'notice') return false;
    if (episode.outcome === 'verifying') {
      const d0 = episode.outcome_detail;
      if (d0 === null || d0.told.includes(d.channel)) return false;
      const how2 = d.channel_kind === 'email' ? 'e-mail' : how;
      await this.#d.episodes.setOutcome(trx, d.episode_id, 'verifying', {
        ...d0,
        told: [...d0.told, d.channel],
        channels: [...d0.channels, { to: d.channel, how: how2 }],
      });
      return false;
    }
    const prior = episode.outcome === 'escalated' ? episode.outcome_detail : null;
    const channels = [...(prior?.channels ?? [])];
    if (!channels.some((c) => c.to === d.channel)) channels.push({ to: d.channel, how: d.channel_kind === 'email' ? 'e-mail' : how });
    // The diagnosis went with the message (the diagnosis itself, or the action path's report), or with one delivered before.
    const withDiagnosis = d.episode.diagnosis !== undefined || (prior?.reason.startsWith(WITH_DIAGNOSIS) ?? false);
    const detail: OutcomeDetail = {
      value: 'escalated',
      reason: `${withDiagnosis ? WITH_DIAGNOSIS : WITHOUT_DIAGNOSIS}: told ${channels.map((c) => (c.how === 'e-mail' ? `${c.to} by e-mail` : `${c.to} through ${c.how}`)).join(', ')}`,
      at: prior?.at ?? at,
      told: channels.map((c) => c.to),
      channels,
    };
    if (prior !== null && prior.told.length === detail.told.length && prior.reason === detail.reason) return false;
    await this.#d.episodes.setOutcome(trx, d.episode_id, 'escalated', detail);
    return prior === null;
  }

  /** Nobody has been told yet and one message was given up: the episode says so plainly. */
  async #gaveUp(trx: Trx, d: Delivery, label: string, problem: string, attempts: number, minutes: number, at: string): Promise<void> {
    const episode = await this.#d.episodes.lock(trx, d.episode_id);
    if (episode === null || episode.outcome === 'escalated' || episode.outcome === 'mitigated' || episode.outcome === 'verifying') return;
    const reason = `nobody told yet: could not tell ${label} after ${attempts} attempts over ${minutes} min (${problem})`.slice(0, 2000);
    await this.#d.episodes.setOutcome(trx, d.episode_id, episode.outcome, { value: null, reason, at, told: [], channels: [] });
  }
}
