import { readFile } from 'node:fs/promises';
import type { KeyObject } from 'node:crypto';
import { Args, Flags } from '@oclif/core';
import type { LicenceStatus } from '../../host/licence/licence.ts';
import { CliProblem, EXIT_USAGE, ServiceCommand, readConfig } from '../base.ts';

export interface LicenceVerifyResult {
  ok: boolean;
  file: string;
  /** Where the licence stands now; `invalid` when its shape or signature is wrong. */
  status: LicenceStatus;
  /** The install it is bound to, if any, and whether that was checked (only with --fingerprint). */
  install: { fingerprint: string; checked: boolean } | null;
  problem: string | null;
}

export default class LicenceVerify extends ServiceCommand {
  static override summary = 'Check a licence file offline: shape, signature and expiry';
  static override description =
    'Verifies the signature against the built-in vendor key and SERVICE_LICENCE_PUBKEY; needs neither the network nor the database. ' +
    'A licence bound to one install is checked against --fingerprint when given. Exits 1 when the licence is bad or expired.';
  static override examples = ['<%= config.bin %> licence-verify licence.json', '<%= config.bin %> licence-verify licence.json --fingerprint 1a2b-… --json'];
  static override enableJsonFlag = true;
  static override args = {
    file: Args.string({ description: 'path to the licence JSON file', required: true }),
  };
  static override flags = {
    fingerprint: Flags.string({ description: 'the install fingerprint a bound licence must name (oncall fingerprint)' }),
  };

  async run(): Promise<LicenceVerifyResult> {
    const { args, flags } = await this.parse(LicenceVerify);
    const config = readConfig();
    const [{ systemClock }, { AppError }, { checkLicence, isUsable, licenceStatus, parsePublicKey, VENDOR_PUBLIC_KEY }] = await Promise.all([
      import('../../host/clock.ts'),
      import('../../host/errors.ts'),
      import('../../host/licence/licence.ts'),
    ]);
    const keys: KeyObject[] = [parsePublicKey(VENDOR_PUBLIC_KEY)];
    if (config.licencePublicKey !== null) {
      try {
        keys.push(parsePublicKey(config.licencePublicKey));
      } catch (e) {
        throw new CliProblem('bad_config', `SERVICE_LICENCE_PUBKEY is not a usable key: ${(e as Error).message}`, EXIT_USAGE);
      }
    }
    let text: string;
    try {
      text = await readFile(args.file, 'utf8');
    } catch (e) {
      throw new CliProblem('unreadable_file', `cannot read ${args.file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, EXIT_USAGE);
    }

    const bad = (problem: string): LicenceVerifyResult => {
      this.logToStderr(`bad licence: ${problem}`);
      return this.outcome({ ok: false, file: args.file, status: licenceStatus(null, systemClock.now(), true), install: null, problem }, false);
    };
    let candidate: unknown;
    try {
      candidate = JSON.parse(text);
    } catch {
      return bad('the file is not JSON');
    }
    // Unchecked binding: hand checkLicence the fingerprint the licence names itself.
    const named = (candidate as { install?: unknown } | null)?.install;
    const fingerprint = flags.fingerprint ?? (typeof named === 'string' ? named : '');
    let status: LicenceStatus;
    try {
      status = licenceStatus(checkLicence(candidate, keys, fingerprint), systemClock.now());
    } catch (e) {
      if (e instanceof AppError) return bad(e.message.replace(/^body\b/, 'licence'));
      throw e;
    }
    const install = typeof named === 'string' ? { fingerprint: named, checked: flags.fingerprint !== undefined } : null;
    const usable = isUsable(status);
    const problem = usable ? null : `the licence expired on ${status.expires_at} and its grace period is over`;
    this.log(`${usable ? 'ok' : 'EXPIRED'}: licence signed by a known vendor key`);
    this.log(`  customer  ${status.customer}`);
    this.log(`  tier      ${status.tier}`);
    this.log(`  expires   ${status.expires_at}`);
    this.log(`  state     ${status.state}${status.in_grace ? ' (in its grace period: renew it)' : ''}`);
    if (install !== null) this.log(`  install   ${install.fingerprint}${install.checked ? ' (matches --fingerprint)' : ' (not checked: pass --fingerprint)'}`);
    return this.outcome({ ok: usable, file: args.file, status, install, problem }, usable);
  }
}
