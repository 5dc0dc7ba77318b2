import { AppError } from '../errors.ts';
import { keychainInstalls } from '../licence/licence-limits.ts';
import type { Licence } from '../licence/licence.ts';

const TIER_NAMES: Record<Licence['tier'], string> = { trial: 'trial', starter: 'Starter', enterprise: 'Enterprise', strategic: 'Strategic' };

export const tierName = (tier: Licence['tier']): string => TIER_NAMES[tier];

/** What the licence allows the keychain: its tier and how many installs one keychain holds (null: a site licence). */
export interface Allowance {
  tier: Licence['tier'];
  installs: number | null;
}

/**
 * The licence's say on the keychain: Enterprise (at most 10 installs) and Strategic (a site
 * licence) have it; Starter and the trial answer 403 `licence_tier` naming the tier.
 */
export class LicenceGate {
  readonly #licences: { inForce(): Promise<Pick<Licence, 'tier' | 'installs'> | null> };

  constructor(licences: { inForce(): Promise<Pick<Licence, 'tier' | 'installs'> | null> }) {
    this.#licences = licences;
  }

  async require(): Promise<Allowance> {
    const licence = await this.#licences.inForce();
    const installs = keychainInstalls(licence);
    if (licence === null) throw new AppError('licence_tier', 'the keychain needs an Enterprise or Strategic licence; this install has none');
    if (installs === 0) {
      const named = licence.tier === 'trial' ? 'a trial licence' : `a ${tierName(licence.tier)} licence`;
      throw new AppError('licence_tier', `the keychain needs an Enterprise or Strategic licence; this install has ${named} (tier ${licence.tier})`);
    }
    return { tier: licence.tier, installs };
  }
}
