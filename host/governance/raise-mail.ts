import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import { markdownText as m } from '../escape.ts';
import { clip } from '../text.ts';
import type { ApprovalRequest } from './approvals.model.ts';
import { APPROVALS_NEEDED } from './levels.ts';

/** Sends one e-mail (the MailService): never throws, answers why not. */
export interface RaiseMailSender {
  send(to: string, subject: string, text: string, opts: { signInState: false }): Promise<{ ok: true } | { ok: false; reason: string }>;
}

export interface RaiseMailDeps {
  /** Who may approve a raise: every enabled owner and admin. */
  people: { withRoles(roles: readonly ['owner', 'admin']): Promise<string[]> };
  mail: RaiseMailSender;
  ledger: Ledger;
  log: Logger;
  /** The console's address for the link to the Control page (the single sign-on settings' `console_address`). */
  consoleAddress: { get(): Promise<string | null> };
}

/**
 * Tells the people who may approve an autonomy raise that one waits for them: every enabled owner
 * and admin but the requester gets one e-mail (tried twice), saying what is asked, by whom, how
 * many approvals it needs and until when, and where to decide it. The outcome is one ledger event
 * `governance.approval_mailed` {request_id, to, failed}. Sent after the request committed, from
 * the host process that took it; the request itself waits on the Control page whatever the mail does.
 */
export class RaiseMail {
  readonly #d: RaiseMailDeps;
  readonly #sending = new Set<Promise<void>>();

  constructor(deps: RaiseMailDeps) {
    this.#d = deps;
  }

  /** Starts telling the approvers of a new raise; resolves at once (see {@link RaiseMail.idle}). */
  tell(r: ApprovalRequest): void {
    const run = this.#tell(r).catch((err: unknown) => this.#d.log.error({ err, request: r.id }, 'could not tell the approvers of a raise'));
    this.#sending.add(run);
    void run.finally(() => this.#sending.delete(run));
  }

  /** Resolves once every e-mail started so far is sent or given up (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#sending.size > 0) await Promise.all([...this.#sending]);
  }

  async #tell(r: ApprovalRequest): Promise<void> {
    const asker = new Set([r.requested_by.trim().toLowerCase(), r.requested_actor.trim().toLowerCase()]);
    const to = (await this.#d.people.withRoles(['owner', 'admin'])).filter((a) => !asker.has(a.trim().toLowerCase()));
    const { subject, text } = raiseMail(r, await this.#d.consoleAddress.get());
    const failed: Array<{ to: string; reason: string }> = [];
    for (const address of to) {
      let sent = await this.#d.mail.send(address, subject, text, { signInState: false });
      if (!sent.ok) sent = await this.#d.mail.send(address, subject, text, { signInState: false });
      if (!sent.ok) failed.push({ to: address, reason: sent.reason });
    }
    const told = to.filter((a) => !failed.some((f) => f.to === a));
    await this.#d.ledger.append({
      type: 'governance.approval_mailed',
      actor: 'system',
      reason: clip(
        to.length === 0
          ? `nobody to tell of the raise of ${r.service}: no other enabled owner or admin`
          : `told ${told.length} of ${to.length} owner(s) and admin(s) that the raise of ${r.service} waits for them${failed.length === 0 ? '' : `; not sent to ${failed.map((f) => `${f.to} (${f.reason})`).join(', ')}`}`,
        4000,
        '…',
      ),
      data: { request_id: r.id, service: r.service, to: told, failed },
    });
  }
}

/** The e-mail of a raise: plain text, inert as Markdown (host/escape.ts), everything needed to decide. */
export function raiseMail(r: ApprovalRequest, publicUrl: string | null): { subject: string; text: string } {
  const needed = r.approvals_needed ?? APPROVALS_NEEDED;
  const where = publicUrl === null ? 'the console’s Control page' : `${publicUrl}/control`;
  const lines = [
    `${m(r.requested_by)} asks to raise the autonomy of ${m(r.service)} from ${r.from_level} to ${r.to_level}.`,
    '',
    r.to_level === 'L1'
      ? `At L1 the service may act on ${m(r.service)}'s incidents, each action once its approvers approve it.`
      : `At ${r.to_level} the service may act on ${m(r.service)}'s incidents.`,
    `The raise needs ${needed} approvals from owners or admins other than the requester; one rejection ends it.`,
    '',
    `Request:  ${r.id}`,
    `Expires:  ${new Date(r.expires_ms).toISOString()}`,
    `Decide:   ${where}`,
    '',
    `Sent by the on-call service, because you are an owner or admin of this install, and your decision is asked for.`,
  ];
  return { subject: `Approval needed: raise ${r.service} from ${r.from_level} to ${r.to_level}`, text: `${lines.join('\n')}\n` };
}
