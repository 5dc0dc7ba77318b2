import { markdownText as m, plainLine, plainText } from '../escape.ts';
import type { NotifyEpisode, NotifyMessage } from '../plugins/contract.ts';
import { clip } from '../text.ts';

/** Why a person gets an e-mail about an incident: what they are to it. */
export type Because = 'on_call' | 'owner' | 'approver' | 'first_owner';

/**
 * The episode of an e-mail's outbox row: what every target gets, plus why this recipient gets it
 * (`because`). Only e-mail rows carry `because`; no target ever sees it.
 */
export type MailedEpisode = NotifyEpisode & { because?: Because[] };

const WHAT: Record<NotifyMessage['event'], string> = {
  'incident.opened': 'Incident opened',
  'incident.escalated': 'Incident escalated',
  'incident.closed': 'Incident closed',
  'incident.diagnosed': 'Incident diagnosed',
  'incident.approval_requested': 'Approval needed',
  'incident.approval_superseded': 'Approval no longer needed',
};

/**
 * The episode as it leaves the service, to every target and in every e-mail: each text that came
 * from outside (the service, the alert names, the diagnosis) is one plain line without escape
 * sequences or control characters; the report (Markdown whose values are escaped where it is
 * written, host/acting/report.ts) is plain text of several lines. host/escape.ts.
 */
export function outgoing<E extends NotifyEpisode>(e: E): E {
  return {
    ...e,
    service: plainLine(e.service),
    alerts: e.alerts.map(plainLine),
    ...(e.diagnosis === undefined
      ? {}
      : { diagnosis: { summary: plainLine(e.diagnosis.summary), holds: e.diagnosis.holds.map(plainLine), unknown: e.diagnosis.unknown.map(plainLine) } }),
    ...(e.report === undefined ? {} : { report: plainText(e.report) }),
  };
}

/**
 * The e-mail telling a person of an incident: everything needed to act, and why they get it. The
 * subject is one plain line; the body is plain text that stays inert when rendered as Markdown
 * (it carries the Markdown report, and mail bridges render bodies): every value in it escaped.
 */
export function incidentMail(msg: NotifyMessage): { subject: string; text: string } {
  const e = outgoing(msg.episode as MailedEpisode);
  const subject = plainLine(
    `[${e.severity}] ${WHAT[msg.event]}: ${e.service}${e.alerts.length > 0 ? ` (${e.alerts.slice(0, 3).join(', ')}${e.alerts.length > 3 ? ', …' : ''})` : ''}`,
  );
  const lines = [
    `${WHAT[msg.event]} on service ${m(e.service)}.`,
    '',
    `Severity: ${e.severity}`,
    `Opened:   ${e.t_open}`,
    `Alerts:   ${e.alerts.length === 0 ? '(none named)' : e.alerts.map(m).join(', ')}`,
    `Episode:  ${e.id}`,
    ...(e.url === null ? [] : [`Console:  ${e.url}`]),
    '',
    ...whatNext(msg.event, e),
    '',
    `Sent at ${msg.sent_at} by the on-call service, because ${because(msg.event, e)}.`,
  ];
  return { subject: clip(subject, 200, '…'), text: `${lines.join('\n')}\n` };
}

/** Why this person gets the e-mail, in words (rows queued before `because` existed went to on-call recipients only). */
function because(event: NotifyMessage['event'], e: MailedEpisode): string {
  const roles = e.because === undefined || e.because.length === 0 ? (['on_call'] as Because[]) : e.because;
  const service = m(e.service);
  const said = roles.map((r) =>
    r === 'owner'
      ? `you own ${service} in the estate`
      : r === 'approver'
        ? `you are one of the approvers of ${service}`
        : r === 'first_owner'
          ? `you are the install's first owner and ${service} names no owner or approver`
          : "you are one of the install's on-call recipients",
  );
  const ask = event === 'incident.approval_requested' ? ', and your decision is asked for' : '';
  return `${said.length === 1 ? said[0]! : `${said.slice(0, -1).join(', ')} and ${said.at(-1)!}`}${ask}`;
}

/** The closing lines: the diagnosis when there is one, else what to expect. */
function whatNext(event: NotifyMessage['event'], e: NotifyEpisode): string[] {
  if (event === 'incident.closed') return ['None of its alerts fire any more.'];
  if (e.report !== undefined) return [e.report];
  const d = e.diagnosis;
  if (event === 'incident.diagnosed' && d !== undefined)
    return [
      `Diagnosis: ${m(d.summary)}`,
      ...(d.holds.length === 0 ? [] : [`Holds:     ${d.holds.map(m).join(', ')}`]),
      ...(d.unknown.length === 0 ? [] : [`Unknown:   ${d.unknown.map(m).join(', ')} (could not be checked; the console says why)`]),
      '',
      'What the service does about it (acting within its autonomy level and approvals) is on the episode page; you hear again if it needs you.',
    ];
  return ['This is escalated to you now. Where the service is investigated (autonomy above off), its diagnosis follows in a second message.'];
}
