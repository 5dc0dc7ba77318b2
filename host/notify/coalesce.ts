import type { NotifyMessage } from '../plugins/contract.ts';
import { markdownText } from '../escape.ts';
import { incidentMail } from './message.ts';

/** Messages of one e-mail told in full; the rest get one line each. */
const IN_FULL = 5;

/**
 * One e-mail carrying several notifications due for the same person (a storm of incidents, an
 * incident opened and diagnosed together): the most urgent first, each of the first few in full
 * (the same text as its own e-mail), the rest one line each. The subject names the worst severity,
 * how many, and the first. A single message is its own e-mail (`incidentMail`).
 */
export function coalescedMail(messages: NotifyMessage[]): { subject: string; text: string } {
  if (messages.length === 1) return incidentMail(messages[0]!);
  const ordered = [...messages].sort((a, b) => rank(b) - rank(a));
  const mails = ordered.map(incidentMail);
  const worst = ordered[0]!.episode.severity;
  const first = mails[0]!.subject.replace(/^\[[a-z]+\] /, '');
  const subject = `[${worst}] ${messages.length} notifications: ${first}, …`;
  const parts = [
    `${messages.length} notifications from the on-call service, gathered into one e-mail (most urgent first).`,
    '',
    // A subject is one plain line; in the body it is escaped like every value there (host/escape.ts).
    ...mails.slice(0, IN_FULL).flatMap((m, i) => [`----- ${i + 1} of ${messages.length}: ${markdownText(m.subject)}`, '', m.text]),
    ...(mails.length > IN_FULL
      ? [
          `----- and ${mails.length - IN_FULL} more:`,
          ...mails.slice(IN_FULL).map((m, i) => `- ${markdownText(m.subject)} (${episodeLine(ordered[IN_FULL + i]!)})`),
        ]
      : []),
  ];
  return { subject: subject.slice(0, 200), text: `${parts.join('\n')}\n` };
}

const rank = (m: NotifyMessage): number => (m.episode.severity === 'critical' ? 2 : m.episode.severity === 'info' ? 0 : 1);
const episodeLine = (m: NotifyMessage): string => (m.episode.url === null ? `episode ${m.episode.id}` : m.episode.url);
