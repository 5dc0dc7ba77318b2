/** The notifications component of doctor: what it reads and how it judges it. */
import { part, plural, type Part } from '../part.ts';

/** What doctor reads of notification delivery (NotifyDelivery.status() fits as it is). */
export interface NotificationsSeen {
  recipients: readonly string[];
  targets: readonly string[];
  pending: number;
  problems: ReadonlyArray<{ channel_kind: 'email' | 'target'; name: string; problem: string; at: string }>;
  /** Why e-mail cannot be sent at all (no mail provider), or null: recipients would then never be told. */
  mailProblem?: string | null;
}

export function describeNotifications(seen: NotificationsSeen): Part {
  const who = `${plural(seen.recipients.length, 'on-call recipient')}, ${plural(seen.targets.length, 'notification target')}`;
  if (seen.recipients.length === 0 && seen.targets.length === 0) {
    return part(
      'warn',
      'no on-call recipients are configured: nobody is told when an incident opens',
      'set them: PUT /v1/settings/notifications or the Settings page (docs/notifications.md)',
    );
  }
  if (seen.problems.length > 0) {
    const list = seen.problems.map((p) => `${p.channel_kind === 'email' ? p.name : `target ${p.name}`}: ${p.problem} (${p.at})`).join('; ');
    return part(
      'fail',
      `${who}; the last delivery failed for ${list}`,
      'fix the mail settings or the target (GET /v1/connectors/{name}); failed messages are retried for an hour (docs/notifications.md)',
    );
  }
  if (seen.recipients.length > 0 && seen.mailProblem) {
    return part(
      'warn',
      `${who}; the recipients cannot be e-mailed: ${seen.mailProblem}`,
      'configure mail: PUT /v1/settings/mail, then POST /v1/settings/mail/test (docs/mail.md)',
    );
  }
  const recipientsOnly =
    seen.recipients.length === 0 ? part('warn', `${who}: nobody is told by e-mail`, 'add on-call recipients: PUT /v1/settings/notifications') : null;
  return recipientsOnly ?? part('ok', `${who}; ${seen.pending} message(s) waiting`);
}
