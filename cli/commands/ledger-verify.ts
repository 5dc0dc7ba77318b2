import { Flags } from '@oclif/core';
import type { VerifyReport } from '../../host/ledger/verify.ts';
import { CliProblem, EXIT_USAGE, ServiceCommand, readConfig } from '../base.ts';

export default class LedgerVerify extends ServiceCommand {
  static override summary = 'Verify the hash chain of the audit ledger, straight from the database';
  static override description =
    'Checks every event in order (seq, prev_hash, hash), the signed checkpoints in the database and in ledger-checkpoints.jsonl, ' +
    'and that no stretch of the chain lacks the checkpoints the service writes. With --expect-seq and --expect-hash it also checks ' +
    'that the entry at that seq still has that hash (a head kept elsewhere, e.g. a shipped "ledger checkpoint" log line). ' +
    'Exits 1 on a broken chain, naming the first bad seq. Works with the service stopped.';
  static override examples = [
    '<%= config.bin %> ledger-verify',
    '<%= config.bin %> ledger-verify --json',
    '<%= config.bin %> ledger-verify --expect-seq 33000 --expect-hash 9f2c…(64 hex digits)',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    'expect-seq': Flags.integer({ min: 1, dependsOn: ['expect-hash'], description: 'seq of a head kept elsewhere' }),
    'expect-hash': Flags.string({ dependsOn: ['expect-seq'], description: 'the hash that entry had (64 hex digits)' }),
  };

  async run(): Promise<VerifyReport> {
    const { flags } = await this.parse(LedgerVerify);
    const config = readConfig();
    const [{ withContext }, { describeLedger }, { HASH_PATTERN }] = await Promise.all([
      import('../context.ts'),
      import('../../host/doctor/ledger-words.ts'),
      import('../../host/ledger/verify.ts'),
    ]);
    let expect: { seq: number; hash: string } | undefined;
    if (flags['expect-seq'] !== undefined && flags['expect-hash'] !== undefined) {
      const hash = flags['expect-hash'].toLowerCase();
      if (!HASH_PATTERN.test(hash)) throw new CliProblem('bad_flag', '--expect-hash must be 64 hex digits', EXIT_USAGE);
      expect = { seq: flags['expect-seq'], hash };
    }
    const report = await withContext(config, async (ctx) => (await ctx.app()).verifyLedger(expect === undefined ? {} : { expect }));
    if (report.ok) this.log(`ok: ${describeLedger(report)}`);
    else this.log(`BROKEN: ${describeLedger(report)}\nfirst bad seq: ${report.first_bad_seq}`);
    const e = report.expected;
    if (e !== null) {
      this.log(
        e.matches
          ? `expected: seq ${e.seq} has hash ${e.hash}`
          : `expected: seq ${e.seq} has ${e.found === null ? 'no entry' : `hash ${e.found}`}, not ${e.hash}`,
      );
    }
    return this.outcome(report, report.ok);
  }
}
