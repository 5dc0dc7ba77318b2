/** The mail component of doctor: what it reads and how it judges it. */
import { part, type Part } from '../part.ts';

/** The mail service's break-glass state (open: codes cannot be sent). */
export interface MailSeen {
  open: boolean;
  reason: string | null;
}

export function describeMail(glass: MailSeen): Part {
  if (!glass.open) return part('ok', 'sign-in codes can be sent; break-glass is closed');
  return part(
    'warn',
    `break-glass is open (the admin token can sign in): ${glass.reason ?? 'codes cannot be sent'}`,
    'configure a mail provider and send a test: PUT /v1/settings/mail, POST /v1/settings/mail/test (docs/mail.md)',
  );
}
