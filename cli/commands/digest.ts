import { Flags } from '@oclif/core';
import type { Digest } from '../../host/digest/digest.ts';
import { AppError } from '../../host/errors.ts';
import { CliProblem, EXIT_USAGE, ServiceCommand, readConfig } from '../base.ts';

export default class DigestCommand extends ServiceCommand {
  static override summary = 'Print the digest of the last days: episodes, times, actions, approvals, governance, alerts, the study, the ledger';
  static override description =
    'The same digest as GET /v1/digest, built in this process on the service database (it only reads): by default its Markdown, ' +
    'with --json the data and the Markdown. The ledger is verified in full for it. Exits 1 when the ledger does not verify.';
  static override examples = ['<%= config.bin %> digest', '<%= config.bin %> digest --days 7', '<%= config.bin %> digest --days 30 --json'];
  static override enableJsonFlag = true;
  static override flags = {
    days: Flags.string({ description: 'how many days back from now, 1 to 90', default: '1' }),
    markdown: Flags.boolean({ description: 'print the Markdown (the default; not with --json)', default: false }),
  };

  async run(): Promise<Digest> {
    const { flags } = await this.parse(DigestCommand);
    if (flags.markdown && this.jsonEnabled()) throw new CliProblem('bad_flag', '--markdown and --json cannot be used together', EXIT_USAGE);
    const { parseDays } = await import('../../host/digest/days.ts');
    let days: number;
    try {
      days = parseDays(flags.days);
    } catch (e) {
      if (e instanceof AppError) throw new CliProblem('bad_flag', `--days: ${e.message}`, EXIT_USAGE);
      throw e;
    }
    const config = readConfig();
    const { withContext } = await import('../context.ts');
    const digest = await withContext(config, async (ctx) => (await ctx.app()).digest.digest.build(days, { freshLedger: true }));
    if (!this.jsonEnabled()) process.stdout.write(digest.markdown);
    return this.outcome(digest, digest.ledger.ok);
  }
}
