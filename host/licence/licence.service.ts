import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { KeyObject } from 'node:crypto';
import { DAY, type Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { InstallIdentity } from '../install/identity.ts';
import type { Install } from '../install/install.ts';
import type { Ledger, RecordEvent } from '../ledger/ledger.service.ts';
import type { Trx } from '../storage/db.ts';
import { checkLicence, licenceStatus, parsePublicKey, signedMessage, VENDOR_PUBLIC_KEY, type Licence, type LicenceStatus } from './licence.ts';
import type { LicenceRepo } from './licence.repo.ts';

export const TRIAL_DAYS = 30;

/** Called inside the transaction that changed the licence, so the mode change commits with it. */
export type AfterLicenceChange = (trx: Trx, record: RecordEvent) => Promise<void>;

/**
 * Online confirmation's say on a licence (licence-check.ts): may turn a usable status into
 * `revoked` or `unconfirmed`. Synchronous: it runs on every status read.
 */
export type ConfirmationHook = (licence: Licence, status: LicenceStatus) => LicenceStatus;

/**
 * The licence in force: a file-managed one (licence.json in SERVICE_CONFIG_DIR, read at start)
 * or the newest one installed over the API or redeemed as a trial. Stored licences are checked
 * again on every read, so an edited row counts as invalid.
 */
export class LicenceService {
  readonly fileManaged: boolean;
  readonly #fileLicence: Licence | null = null;
  /** The stored licence text last checked and what it proved to be: every request reads the
   * mode, and a signature check per request would cost more than the request itself. */
  #lastChecked: { body: string; licence: Licence | null } | null = null;
  readonly #vendorKeys: KeyObject[];
  readonly #confirmation: ConfirmationHook | null;

  readonly #repo: LicenceRepo;
  readonly #install: Pick<Install, 'lock' | 'markTrialRedeemed'>;
  readonly #identity: InstallIdentity;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  readonly #changed: AfterLicenceChange[] = [];

  constructor(deps: {
    repo: LicenceRepo;
    install: Pick<Install, 'lock' | 'markTrialRedeemed'>;
    identity: InstallIdentity;
    ledger: Ledger;
    clock: Clock;
    opts: { configDir: string | null; extraPublicKey: string | null };
    confirmation: ConfirmationHook | null;
  }) {
    this.#repo = deps.repo;
    this.#install = deps.install;
    this.#identity = deps.identity;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
    this.#confirmation = deps.confirmation;
    this.#vendorKeys = [parsePublicKey(VENDOR_PUBLIC_KEY), ...(deps.opts.extraPublicKey === null ? [] : [parsePublicKey(deps.opts.extraPublicKey)])];
    const file = deps.opts.configDir === null ? null : path.join(deps.opts.configDir, 'licence.json');
    let text: string | null = null;
    try {
      if (file !== null) text = readFileSync(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    this.fileManaged = text !== null;
    if (text !== null) {
      try {
        this.#fileLicence = this.#check(JSON.parse(text));
      } catch {
        this.#fileLicence = null;
      }
    }
  }

  /** Called inside every licence change's transaction (the status area records the mode change it causes). */
  onChanged(listener: AfterLicenceChange): void {
    this.#changed.push(listener);
  }

  async #afterChange(trx: Trx, record: RecordEvent): Promise<void> {
    for (const l of this.#changed) await l(trx, record);
  }

  /** The licence in force and where it stands now. */
  async status(trx?: Trx): Promise<LicenceStatus> {
    const { licence, invalid } = await this.#inForce(trx);
    const status = licenceStatus(licence, this.#clock.now(), invalid);
    return licence === null || this.#confirmation === null ? status : this.#confirmation(licence, status);
  }

  /** The licence in force (checked), or null when there is none or it does not verify. */
  async inForce(trx?: Trx): Promise<Licence | null> {
    return (await this.#inForce(trx)).licence;
  }

  async #inForce(trx?: Trx): Promise<{ licence: Licence | null; invalid: boolean }> {
    if (this.fileManaged) return { licence: this.#fileLicence, invalid: this.#fileLicence === null };
    const row = await this.#repo.latest(trx);
    if (row === null) return { licence: null, invalid: false };
    if (this.#lastChecked?.body !== row.body) {
      let licence: Licence | null;
      try {
        licence = this.#check(JSON.parse(row.body));
      } catch {
        licence = null;
      }
      this.#lastChecked = { body: row.body, licence };
    }
    const { licence } = this.#lastChecked;
    return { licence, invalid: licence === null };
  }

  async installLicence(candidate: unknown, actor: string): Promise<LicenceStatus> {
    if (this.fileManaged) throw new AppError('licence_file_managed', 'the licence is mounted from licence.json in SERVICE_CONFIG_DIR');
    const licence = this.#check(candidate);
    await this.#ledger.transact(async (trx, record) => {
      await this.#repo.insert(trx, { body: JSON.stringify(licence), source: 'api', installed_by: actor, installed_at: this.#clock.now().toISOString() });
      await record({ type: 'config.licence_installed', actor, reason: `licence for ${licence.customer} installed`, data: summary(licence) });
      await this.#afterChange(trx, record);
    });
    return this.status();
  }

  /** Starts the 30-day trial bound to this install, once per install. */
  async redeemTrial(customer: string | undefined, actor: string): Promise<LicenceStatus> {
    if (this.fileManaged) throw new AppError('licence_file_managed', 'the licence is mounted from licence.json in SERVICE_CONFIG_DIR');
    const now = this.#clock.now();
    const unsigned: Omit<Licence, 'signature'> = {
      customer: customer ?? 'Trial',
      tier: 'trial',
      services: 50,
      installs: 1,
      features: [],
      issued_at: now.toISOString(),
      expires_at: new Date(now.getTime() + TRIAL_DAYS * DAY).toISOString(),
      grace_days: 0,
      install: this.#identity.fingerprint,
    };
    const licence: Licence = { ...unsigned, signature: this.#identity.sign(signedMessage(unsigned)) };
    await this.#ledger.transact(async (trx, record) => {
      await this.#install.lock(trx);
      if (!(await this.#install.markTrialRedeemed(trx, now.toISOString()))) throw new AppError('trial_already_used', 'this install has already had its trial');
      await this.#repo.insert(trx, { body: JSON.stringify(licence), source: 'trial', installed_by: actor, installed_at: now.toISOString() });
      await record({ type: 'config.trial_started', actor, reason: `${TRIAL_DAYS}-day trial started`, data: summary(licence) });
      await this.#afterChange(trx, record);
    });
    return this.status();
  }

  /** Vendor keys for every tier; this install's own key only for its own trial. */
  #check(candidate: unknown): Licence {
    const tier = (candidate as { tier?: unknown } | null)?.tier;
    const keys = tier === 'trial' ? [...this.#vendorKeys, this.#identity.publicKey] : this.#vendorKeys;
    return checkLicence(candidate, keys, this.#identity.fingerprint);
  }
}

function summary(l: Licence): Record<string, unknown> {
  return { customer: l.customer, tier: l.tier, services: l.services, installs: l.installs, expires_at: l.expires_at, grace_days: l.grace_days };
}
