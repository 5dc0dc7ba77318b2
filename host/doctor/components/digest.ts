/** The digest component of doctor: the last daily digest e-mail and when the next is due. */
import type { DigestMailState } from '../../digest/digest.model.ts';
import { part, plural, type Part } from '../part.ts';

/** What doctor reads of the daily digest (DigestMailer.status() fits as it is). */
export interface DigestSeen {
  last: DigestMailState | null;
  /** `HH:MM` and the time zone it is sent in. */
  at: string;
  time_zone: string;
}

export function describeDigest(seen: DigestSeen): Part {
  const when = `sent daily at ${seen.at} ${seen.time_zone}`;
  const last = seen.last;
  if (last === null) return part('ok', `no digest e-mail sent yet; ${when}`);
  if (!last.ok) {
    const who = last.failed.map((f) => `${f.to}: ${f.reason}`).join('; ');
    return part(
      'fail',
      `the digest of ${last.day} did not reach ${who} (each send is tried twice); ${when}`,
      'fix the mail settings (PUT /v1/settings/mail, then POST /v1/settings/mail/test) or add an owner or admin; the next day sends again (docs/digest.md)',
    );
  }
  return part('ok', `the digest of ${last.day} went to ${plural(last.recipients, 'owner or admin', 'owners and admins')} at ${last.at}; ${when}`);
}
