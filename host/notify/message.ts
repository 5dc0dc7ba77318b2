import type { NotifyMessage } from '../plugins/contract.ts';

const WHAT: Record<NotifyMessage['event'], string> = {
  'incident.opened': 'Incident opened',
  'incident.escalated': 'Incident escalated',
  'incident.closed': 'Incident closed',
  'incident.diagnosed': 'Incident diagnosed',
  'incident.approval_requested': 'Approval needed',
  'incident.approval_superseded': 'Approval no longer needed',
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
    ...whatNext(m),
    '',
    `Sent at ${m.sent_at} by the on-call service, because you are one of its on-call recipients.`,
  ];
  return { subject: subject.slice(0, 200), text: `${lines.join('\n')}\n` };
}

/** The closing lines: the diagnosis when there is one, else what to expect. */
function whatNext(m: NotifyMessage): string[] {
  if (m.event === 'incident.closed') return ['None of its alerts fire any more.'];
  if (m.episode.report !== undefined) return [m.episode.report];
  const d = m.episode.diagnosis;
  if (m.event === 'incident.diagnosed' && d !== undefined)
    return [
      `Diagnosis: ${d.summary}`,
      ...(d.holds.length === 0 ? [] : [`Holds:     ${d.holds.join(', ')}`]),
      ...(d.unknown.length === 0 ? [] : [`Unknown:   ${d.unknown.join(', ')} (could not be checked; the console says why)`]),
      '',
      'What the service does about it (acting within its autonomy level and approvals) is on the episode page; you hear again if it needs you.',
    ];
  return ['This is escalated to you now. Where the service is investigated (autonomy above off), its diagnosis follows in a second message.'];
}
