import type { DoctorExtras } from '../doctor.service.ts';
import { attemptPart, type Part } from '../part.ts';
import { describeAutonomy } from './autonomy.ts';
import { describeConnectors } from './connectors.ts';
import { describeDigest } from './digest.ts';
import { describeKeychain } from './keychain.ts';
import { describeLeases } from './leases.ts';
import { describeLicence } from './licence.ts';
import { describeMail } from './mail.ts';
import { describeNotifications } from './notifications.ts';
import { describeSchedules } from './schedules.ts';
import { describeWitness } from './witness.ts';

type ExtraName = keyof DoctorExtras;
type Seen<K extends ExtraName> = Awaited<ReturnType<NonNullable<DoctorExtras[K]>>>;

/** One component only the running service reports: it reads its state, then judges it. */
export interface ExtraComponent {
  name: ExtraName;
  /** Null when this process cannot see the component (the CLI on its own). */
  check(extras: DoctorExtras, nowMs: number): Promise<Part> | null;
}

function component<K extends ExtraName>(name: K, cannot: string, fix: string, judge: (seen: Seen<K>, nowMs: number) => Part): ExtraComponent {
  return {
    name,
    check(extras, nowMs) {
      // A generic index does not narrow to a callable: this is the reader of component K.
      const read = extras[name] as (() => Promise<Seen<K>>) | undefined;
      if (read === undefined) return null;
      return attemptPart(async () => judge(await read(), nowMs), cannot, fix);
    },
  };
}

/**
 * The components the running service adds to doctor, in report order, each judged in its own
 * file: when it cannot be read at all, it fails naming `cannot`, with `fix`. A new component is
 * a file beside these and a line here (and its name in ComponentName and DoctorExtras).
 */
export const EXTRA_COMPONENTS: readonly ExtraComponent[] = [
  component('connectors', 'cannot list the connectors', 'check the database, then GET /v1/connectors', describeConnectors),
  component('mail', 'cannot read the mail state', 'check the database, then GET /v1/settings/mail', describeMail),
  component('licence', 'cannot read the licence', 'check the database, then GET /v1/status', describeLicence),
  component('schedules', 'cannot read the schedules', 'restart the service', describeSchedules),
  component('notifications', 'cannot read the notification state', 'check the database, then GET /v1/notifications', describeNotifications),
  component('autonomy', 'cannot read the autonomy levels', 'check the database, then GET /v1/autonomy', describeAutonomy),
  component('digest', 'cannot read the daily digest state', 'check the database, then GET /v1/doctor again', describeDigest),
  component('keychain', 'cannot read the keychain', 'check the database, then GET /v1/keychain', describeKeychain),
  component('witness', 'cannot read the ledger witnesses', 'restart the service', describeWitness),
  component('leases', 'cannot read the leases', 'check the database, then GET /v1/live', describeLeases),
];
