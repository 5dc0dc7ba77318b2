/** The licence component of doctor: what it reads and how it judges it. */
import type { ConfirmationView } from '../../licence/licence-check.ts';
import type { ServiceUsage } from '../../licence/licence-limits.ts';
import type { LicenceStatus } from '../../licence/licence.ts';
import { part, plural, type Part } from '../part.ts';

/** What doctor reads of the licence: where it stands, its confirmation, and services against its limit. */
export interface LicenceSeen {
  status: LicenceStatus;
  confirmation: ConfirmationView | null;
  usage: ServiceUsage | null;
  /** Services beyond the licence's limit (alerts taken in, not added to the estate or autonomy). */
  overLimit: ReadonlyArray<{ service: string }>;
}

export function describeLicence(seen: LicenceSeen): Part {
  const s = seen.status;
  const c = seen.confirmation;
  const who = s.customer === null ? '' : ` (${s.customer}, ${s.tier ?? 'unknown tier'}, expires ${s.expires_at})`;
  const usage = seen.usage === null ? '' : `; ${seen.usage.services_used} of ${seen.usage.services_allowed ?? 'unlimited'} services`;
  let confirm = '';
  if (c !== null) {
    if (c.mode === 'offline') confirm = '; confirmation off (SERVICE_LICENCE_CHECK=offline)';
    else if (c.server === null) confirm = '; not confirmed online: SERVICE_LICENCE_SERVER is unset';
    else if (c.applies)
      confirm = `; confirmation ${c.mode}: last confirmed ${c.last_confirmed_at ?? 'never'}${c.last_result === null || c.last_result === 'valid' ? '' : `, last attempt ${c.last_result}${c.last_problem === null ? '' : ` (${c.last_problem})`}`}${c.lapses_at === null ? '' : `, unconfirmed it stops counting at ${c.lapses_at}`}`;
  }
  const detail = `licence ${s.state}${who}${usage}${confirm}`;
  switch (s.state) {
    case 'none':
      return part('warn', detail, 'install a licence (POST /v1/licence) or start the 30-day trial (POST /v1/licence/redeem)');
    case 'invalid':
      return part('fail', detail, 'the licence does not verify: install the one the vendor sent, unedited (`oncall licence-verify <file>` checks it)');
    case 'expired':
      return part('fail', detail, 'install a renewed licence (POST /v1/licence)');
    case 'revoked':
      return part('fail', detail, 'the vendor revoked this licence: contact the vendor and install a new one');
    case 'unconfirmed':
      return part(
        'fail',
        detail,
        `the licence server could not confirm the licence within its grace: let the service reach ${c?.server ?? 'SERVICE_LICENCE_SERVER'}, or set SERVICE_LICENCE_CHECK=auto`,
      );
    case 'grace':
      return part('warn', detail, 'the licence has expired and runs on its grace days: install a renewed licence');
  }
  if (seen.overLimit.length > 0) {
    const names = seen.overLimit
      .slice(0, 10)
      .map((o) => o.service)
      .join(', ');
    return part(
      'warn',
      `${detail}; ${plural(seen.overLimit.length, 'service')} beyond the licence (alerts taken in, not added to the estate or autonomy): ${names}${seen.overLimit.length > 10 ? ', …' : ''}`,
      'a licence with more services lifts the limit (contact the vendor)',
    );
  }
  if (c !== null && c.applies && (c.last_result === 'unreachable' || c.last_result === 'error')) {
    return part('warn', detail, `let the service reach ${c.server} (outbound HTTPS); it retries every 6 hours`);
  }
  return part('ok', detail);
}
