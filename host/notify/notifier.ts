import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { EpisodeNotifier, IncidentChange } from '../episodes/episode.service.ts';
import type { NotifyEpisode, NotifyEvent } from '../plugins/contract.ts';
import type { Trx } from '../storage/db.ts';
import { outgoing, type Because, type MailedEpisode } from './message.ts';
import type { NotifySettingsRepo } from './notify-settings.repo.ts';
import type { ChannelKind, OutboxRepo } from './outbox.repo.ts';

/** One recipient or target a message goes to. */
export interface Channel {
  channel_kind: ChannelKind;
  /** An e-mail address or a connector name. */
  channel: string;
  /** An e-mail's recipient: what they are to the incident, said in the e-mail (on-call recipient when absent). */
  because?: Because[];
}

/** A person the action path tells by e-mail, and what they are to the service. */
export interface Told {
  email: string;
  as: Exclude<Because, 'on_call'>;
}

/**
 * Who is told of a new incident. Today: the install's on-call recipients and targets
 * (`/v1/settings/notifications`). This is the seam where, once the estate exists, the
 * service's owner and approvers join them (by the episode's service).
 */
export interface Audience {
  of(trx: Trx, episode: IncidentChange['episode']): Promise<Channel[]>;
}

/** The on-call recipients and targets of the install, whatever the service. */
export class OnCallAudience implements Audience {
  readonly #settings: NotifySettingsRepo;

  constructor(settings: NotifySettingsRepo) {
    this.#settings = settings;
  }

  async of(trx: Trx): Promise<Channel[]> {
    const s = await this.#settings.get(trx);
    return [
      ...s.recipients.map((r) => ({ channel_kind: 'email' as const, channel: r })),
      ...s.targets.map((t) => ({ channel_kind: 'target' as const, channel: t })),
    ];
  }
}

/**
 * Writes the messages about incidents into the outbox, inside the episode's own transaction.
 * An opening goes to the audience; an escalation and the close go to whoever was told of the
 * opening (so PagerDuty resolves what it triggered, and nobody hears of a close out of the blue).
 */
export class Notifier implements EpisodeNotifier {
  readonly #outbox: OutboxRepo;
  readonly #audience: Audience;
  readonly #clock: Clock;
  readonly #address: { get(trx?: Trx): Promise<string | null> };
  readonly #queued: Array<() => void> = [];

  constructor(deps: { outbox: OutboxRepo; audience: Audience; clock: Clock; consoleAddress: { get(trx?: Trx): Promise<string | null> } }) {
    this.#outbox = deps.outbox;
    this.#audience = deps.audience;
    this.#clock = deps.clock;
    this.#address = deps.consoleAddress;
  }

  async tell(trx: Trx, change: IncidentChange): Promise<{ to: string[]; stale: Array<{ event: NotifyEvent; to: string }> }> {
    const e = change.episode;
    // A close makes what still waits to tell of the incident's escalation or diagnosis untrue:
    // "Incident escalated" minutes after it closed sends people to a fixed incident. Those are
    // dropped; the opening and the close themselves still go.
    const stale =
      change.event === 'incident.closed'
        ? await this.#outbox.dropStale(trx, e.id, ['incident.escalated', 'incident.diagnosed'], this.#clock.now().getTime(), this.#clock.now().toISOString())
        : [];
    const channels = change.event === 'incident.opened' ? await this.#audience.of(trx, e) : await this.#outbox.channelsOf(trx, e.id);
    await this.#queue(trx, change.event, e, change.severity, channels, change.diagnosis === undefined ? {} : { diagnosis: change.diagnosis });
    return { to: channels.map((c) => c.channel), stale: stale.map((d) => ({ event: d.event, to: d.channel })) };
  }

  async #queue(
    trx: Trx,
    event: NotifyEvent,
    e: IncidentChange['episode'],
    severity: IncidentChange['severity'],
    channels: Channel[],
    extra: Partial<NotifyEpisode>,
  ): Promise<void> {
    const now = this.#clock.now();
    const base = await this.#address.get(trx);
    const episode: NotifyEpisode = outgoing({
      id: e.id,
      service: e.service,
      severity,
      t_open: e.t_open,
      alerts: e.alerts,
      outcome: e.outcome === '' ? null : e.outcome,
      url: base === null ? null : `${base}/episodes/${encodeURIComponent(e.id)}`,
      ...extra,
    });
    for (const c of channels) {
      const mailed: MailedEpisode = c.channel_kind === 'email' ? { ...episode, because: c.because ?? ['on_call'] } : episode;
      await this.#outbox.add(trx, {
        id: randomUUID(),
        episode_id: e.id,
        event,
        channel_kind: c.channel_kind,
        channel: c.channel,
        episode: mailed,
        created_at: now.toISOString(),
        created_ms: now.getTime(),
        next_ms: now.getTime(),
      });
    }
  }

  /**
   * The acting path's messages (host/acting), in its transaction: an escalation goes to whoever was
   * told of the opening and, by e-mail, to `people` (the service's owner and approvers); an
   * approval request, and its withdrawal when superseded, go to `people` only. Each carries the
   * Markdown `report` and, when there is one, the diagnosis; each e-mail says what its recipient
   * is to the service. Answers who.
   */
  async tellPeople(
    trx: Trx,
    change: {
      event: 'incident.escalated' | 'incident.approval_requested' | 'incident.approval_superseded';
      episode: IncidentChange['episode'];
      severity: IncidentChange['severity'];
      report: string;
      diagnosis?: NotifyEpisode['diagnosis'];
      people: Told[];
    },
  ): Promise<string[]> {
    const told = change.event === 'incident.escalated' ? await this.#outbox.channelsOf(trx, change.episode.id) : [];
    const channels: Channel[] = told.map((c) => (c.channel_kind === 'email' ? { ...c, because: ['on_call'] } : c));
    for (const p of change.people) {
      const known = channels.find((c) => c.channel_kind === 'email' && c.channel === p.email);
      if (known === undefined) channels.push({ channel_kind: 'email', channel: p.email, because: [p.as] });
      else if (!known.because!.includes(p.as)) known.because!.push(p.as);
    }
    const extra: Partial<NotifyEpisode> = { report: change.report, ...(change.diagnosis === undefined ? {} : { diagnosis: change.diagnosis }) };
    await this.#queue(trx, change.event, change.episode, change.severity, channels, extra);
    return channels.map((c) => c.channel);
  }

  /** Delivery subscribes at construction: messages were queued and committed, deliver them soon. */
  onQueued(listener: () => void): void {
    this.#queued.push(listener);
  }

  nudge(): void {
    for (const l of this.#queued) l();
  }
}
