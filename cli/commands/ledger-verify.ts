import type { VerifyReport } from '../../host/ledger/verify.ts';
import { ServiceCommand, readConfig } from '../base.ts';

export default class LedgerVerify extends ServiceCommand {
  static override summary = 'Verify the hash chain of the audit ledger, straight from the database';
  static override description =
    'Checks every event in order (seq, prev_hash, hash) and the signed checkpoints in the database and in ledger-checkpoints.jsonl. ' +
    'Exits 1 on a broken chain, naming the first bad seq. Works with the service stopped.';
  static override examples = ['<%= config.bin %> ledger-verify', '<%= config.bin %> ledger-verify --json'];
  static override enableJsonFlag = true;

  async run(): Promise<VerifyReport> {
    await this.parse(LedgerVerify);
    const config = readConfig();
    const [{ withContext }, { describeLedger }] = await Promise.all([import('../context.ts'), import('../../host/doctor/doctor.service.ts')]);
    const report = await withContext(config, (ctx) => ctx.verifyLedger());
    if (report.ok) this.log(`ok: ${describeLedger(report)}`);
    else this.log(`BROKEN: ${describeLedger(report)}\nfirst bad seq: ${report.first_bad_seq}`);
    return this.outcome(report, report.ok);
  }
}
