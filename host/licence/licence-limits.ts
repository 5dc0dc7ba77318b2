import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { HeldAlerts } from '../intake/held-alerts.ts';
import type { LicenceLimitsRepo } from './licence-limits.repo.ts';
import { isUsable, type Licence } from './licence.ts';
import type { LicenceService } from './licence.service.ts';

/** Services per tier when the licence names no number of its own. */
export const TIER_SERVICES = { trial: 50, starter: 50, enterprise: 250, strategic: null } as const;

/**
 * How many services a licence allows: Starter and the trial 50; Enterprise the licence's own
 * `services` number (250 when it names none); Strategic unlimited (null). No licence: 0.
 */
export function serviceLimit(licence: Pick<Licence, 'tier' | 'services'> | null): number | null {
  if (licence === null) return 0;
  switch (licence.tier) {
    case 'trial':
    case 'starter':
      return Math.min(licence.services ?? TIER_SERVICES.starter, TIER_SERVICES.starter);
    case 'enterprise':
      return licence.services ?? TIER_SERVICES.enterprise;
    case 'strategic':
      return null;
  }
}

/** Installs in one keychain per tier: Enterprise 10, Strategic a site licence (no limit); the others none. */
export const TIER_KEYCHAIN_INSTALLS = { trial: 0, starter: 0, enterprise: 10, strategic: null } as const;

/**
 * Whether a licence has the keychain, and how many installs one keychain may hold (home and
 * members): Enterprise the licence's `installs`, never more than 10; Strategic unlimited (a site
 * licence, null); Starter and the trial none (0). No licence: none.
 */
export function keychainInstalls(licence: Pick<Licence, 'tier' | 'installs'> | null): number | null {
  if (licence === null) return 0;
  switch (licence.tier) {
    case 'trial':
    case 'starter':
      return 0;
    case 'enterprise':
      return Math.min(licence.installs ?? TIER_KEYCHAIN_INSTALLS.enterprise, TIER_KEYCHAIN_INSTALLS.enterprise);
    case 'strategic':
      return null;
  }
}

/** The limit a licence puts on services. */
export class LicenceLimits {
  /** null: unlimited. */
  readonly services: number | null;

  constructor(services: number | null) {
    this.services = services;
  }

  static of(licence: Pick<Licence, 'tier' | 'services'> | null): LicenceLimits {
    return new LicenceLimits(serviceLimit(licence));
  }

  /** Whether an estate of `serviceCount` services is within the licence. */
  allows(serviceCount: number): boolean {
    return this.services === null || serviceCount <= this.services;
  }
}

export interface ServiceUsage {
  services_used: number;
  /** null: unlimited. */
  services_allowed: number | null;
}

/** The services that count toward the licence: the estate's added services, the earliest added first. */
export interface CountedServices {
  addedInOrder(): Promise<string[]>;
}

/** How many services one tick reports at most (the rest follow on the next ticks). */
const REPORTS_PER_TICK = 100;

/**
 * Tier limits on services. Services count from alerts: the distinct services of the held set.
 * The first `limit` services by first sighting are within the licence; a service beyond it
 * still has its alerts taken in (alerts are never dropped) but is not offered to the estate or
 * to autonomy (`knownServices()` leaves it out), and is reported once as `licence.limit_reached`
 * and as a doctor warning.
 */
export class ServiceLimits {
  readonly #me = randomBytes(8).toString('hex');
  readonly #repo: LicenceLimitsRepo;
  /** The intake area's held alerts: the services they name are known (and counted without an estate). */
  readonly #held: Pick<HeldAlerts, 'servicesByFirstSeen'>;
  readonly #licences: LicenceService;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #counted: CountedServices | null;

  /**
   * `counted`: the services that count (the estate's added services); without it, the services
   * alerts named count, as before the estate.
   */
  constructor(deps: {
    repo: LicenceLimitsRepo;
    held: Pick<HeldAlerts, 'servicesByFirstSeen'>;
    licences: LicenceService;
    ledger: Ledger;
    clock: Clock;
    log: Logger;
    counted?: CountedServices;
  }) {
    this.#repo = deps.repo;
    this.#held = deps.held;
    this.#licences = deps.licences;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
    this.#log = deps.log;
    this.#counted = deps.counted ?? null;
  }

  /** The counted services, earliest first. */
  #services(): Promise<string[]> {
    return this.#counted === null ? this.#held.servicesByFirstSeen() : this.#counted.addedInOrder();
  }

  async limits(): Promise<LicenceLimits> {
    return LicenceLimits.of(await this.#licences.inForce());
  }

  async usage(): Promise<ServiceUsage> {
    const [services, limits] = await Promise.all([this.#services(), this.limits()]);
    return { services_used: services.length, services_allowed: limits.services };
  }

  /** Services within the licence, sorted by name: a KnownServices for governance and the estate. */
  async knownServices(): Promise<string[]> {
    const [services, limits] = await Promise.all([this.#services(), this.limits()]);
    const within = limits.services === null ? services : services.slice(0, limits.services);
    if (this.#counted === null) return within.sort();
    // Services alerts name are known too (placed under their own name, as a match, until a
    // person adds them); only the estate's services count, and only those beyond the limit are left out.
    const beyond = new Set(services.slice(within.length));
    return [...new Set([...within, ...(await this.#held.servicesByFirstSeen()).filter((s) => !beyond.has(s))])].sort();
  }

  /** Whether `service` is within the licence (a service no alert named yet would be the next). */
  async allowed(service: string): Promise<boolean> {
    const [services, limits] = await Promise.all([this.#services(), this.limits()]);
    const i = services.indexOf(service);
    return limits.allows(i === -1 ? services.length + 1 : i + 1);
  }

  /** Services beyond the limit, with when each was reported (null: not yet). */
  async overLimit(): Promise<{ service: string; reported_at: string | null }[]> {
    const [services, limits, reported] = await Promise.all([this.#services(), this.limits(), this.#repo.reported()]);
    if (limits.services === null) return [];
    return services.slice(limits.services).map((service) => ({ service, reported_at: reported.get(service) ?? null }));
  }

  /** The tick's share: records `licence.limit_reached` once per service beyond the limit. */
  async tick(): Promise<number> {
    if (!(await this.#licences.status().then((s) => isUsable(s)))) return 0;
    const [services, limits] = await Promise.all([this.#services(), this.limits()]);
    if (limits.allows(services.length) || limits.services === null) return 0;
    const reported = await this.#repo.reported();
    const fresh = services
      .slice(limits.services)
      .filter((s) => !reported.has(s))
      .slice(0, REPORTS_PER_TICK);
    let n = 0;
    for (const service of fresh) {
      const at = this.#clock.now().toISOString();
      try {
        const mine = await this.#ledger.transact(async (trx, record) => {
          if (!(await this.#repo.claim(trx, service, at, this.#me))) return false;
          await record({
            type: 'licence.limit_reached',
            actor: 'licence-limits',
            reason: `service ${service} is beyond the licence's ${limits.services} services: its alerts are taken in and it stays in the estate, but it is left out of autonomy`,
            data: { service, services_allowed: limits.services, services_used: services.length },
          });
          return true;
        });
        if (mine) n++;
      } catch (err) {
        this.#log.error({ err, service }, 'could not record a service over the licence limit');
      }
    }
    return n;
  }
}
