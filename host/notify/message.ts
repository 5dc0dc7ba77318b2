import type { NotifyMessage } from '../plugins/contract.ts';

const WHAT: Record<NotifyMessage['event'], string> = {
  'incident.opened': 'Incident opened',
  'incident.escalated': 'Incident escalated',
  'incident.closed': 'Incident closed',
};

/** The e-mail telling an on-call recipient of an incident: plain text, everything needed to act. */
export function incidentMail(m: NotifyMessage): { subject: string; text: string } {
  const e = m.episode;
  const subject = `[${e.severity}] ${WHAT[m.event]}: ${e.service}${e.alerts.length > 0 ? ` (${e.alerts.slice(0, 3).join(', ')}${e.alerts.length > 3 ? ', …' : ''})` : ''}`;
  const lines = [
    `${WHAT[m.event]} on service ${e.service}.`,
    '',
    `Severity: ${e.severity}`,
    `Opened:   ${e.t_open}`,
    `Alerts:   ${e.alerts.length === 0 ? '(none named)' : e.alerts.join(', ')}`,
    `Episode:  ${e.id}`,
    ...(e.url === null ? [] : [`Console:  ${e.url}`]),
    '',
    m.event === 'incident.closed'
      ? 'None of its alerts fire any more.'
      : 'No investigation capability is installed yet: this is escalated to you without a diagnosis.',
    '',
    `Sent at ${m.sent_at} by the on-call service, because you are one of its on-call recipients.`,
  ];
  return { subject: subject.slice(0, 200), text: `${lines.join('\n')}\n` };
}
