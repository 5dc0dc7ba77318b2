import { Flags } from '@oclif/core';
import { plainLine as oneLine } from '../../../host/escape.ts';
import type { CheckRun } from '../../../host/investigation/checks-now.ts';
import { ServiceCommand, readConfig, CliProblem, EXIT_USAGE } from '../../base.ts';

const VERDICT_WIDTH = 'ruled_out'.length;

export default class ChecksRun extends ServiceCommand {
  static override summary = "Run a service's checks now, read-only, and print the verdicts and their evidence";
  static override description =
    'Runs every cause of the loaded packs (or the one given with --cause) against the connectors the estate links to the service, now ' +
    '(or as of --at), in this process on the service database, as POST /v1/checks/run does: the same checks, bounds and connectors. ' +
    'Checks only read. Nothing is written unless --record is given, which records one check.started and a check.finished per cause with actor cli.';
  static override examples = [
    '<%= config.bin %> checks run --service checkout',
    '<%= config.bin %> checks run --service checkout --cause prometheus/error-rate --at 2026-11-22T04:30:00Z --json',
    '<%= config.bin %> checks run --service checkout --record',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    service: Flags.string({ description: 'the service to check, as the estate names it', required: true }),
    cause: Flags.string({ description: 'only this cause (<pack>/<cause>, see `oncall packs list`)' }),
    at: Flags.string({ description: 'check as of this time (ISO 8601, e.g. 2026-11-22T04:30:00Z); now by default' }),
    record: Flags.boolean({ description: 'record check.started and check.finished events (actor cli) in the ledger', default: false }),
  };

  async run(): Promise<CheckRun> {
    const { flags } = await this.parse(ChecksRun);
    const [{ ajv }, { SERVICE_NAME }] = await Promise.all([import('../../../host/json-schema.ts'), import('../../../host/estate/estate.schema.ts')]);
    if (!new RegExp(SERVICE_NAME).test(flags.service))
      throw new CliProblem('invalid_service', `--service ${JSON.stringify(flags.service)} is not a service name (letters, digits, . _ -)`, EXIT_USAGE);
    if (flags.at !== undefined && !ajv.validate({ type: 'string', format: 'date-time' }, flags.at))
      throw new CliProblem('invalid_time', `--at ${JSON.stringify(flags.at)} is not an ISO 8601 time such as 2026-11-22T04:30:00Z`, EXIT_USAGE);
    const at = flags.at === undefined ? new Date() : new Date(flags.at);
    const config = readConfig();
    const [{ withContext }, { openChecks }] = await Promise.all([import('../../context.ts'), import('../../ops.ts')]);
    const result = await withContext(config, async (ctx) => {
      const checks = await openChecks(ctx);
      if (flags.cause !== undefined && checks.catalogue.get(flags.cause) === null) {
        const known = checks.catalogue.causes.map((c) => c.id);
        throw new CliProblem(
          'unknown_cause',
          `no loaded pack declares cause ${flags.cause}; ${known.length === 0 ? 'no pack is loaded' : `known causes: ${known.join(', ')}`} (see oncall packs list)`,
          EXIT_USAGE,
        );
      }
      if (checks.catalogue.causes.length === 0)
        throw new CliProblem('no_causes', 'no pack is loaded: there is no cause to check (see oncall packs list)', EXIT_USAGE);
      return checks.run({ service: flags.service, cause: flags.cause ?? null, at, asked: flags.at !== undefined, record: flags.record });
    });
    this.#print(result, flags.record);
    return this.outcome(result, true);
  }

  #print(r: CheckRun, recorded: boolean): void {
    const count = (v: string) => r.verdicts.filter((x) => x.verdict === v).length;
    this.log(`checks of ${r.service} at ${r.at}: ${count('holds')} hold, ${count('ruled_out')} ruled out, ${count('unknown')} unknown`);
    const byId = new Map(r.evidence.map((e) => [e.id, e]));
    const w = Math.max(0, ...r.verdicts.map((v) => v.cause.length));
    for (const v of r.verdicts) {
      this.log(`${v.verdict.padEnd(VERDICT_WIDTH)}  ${v.cause.padEnd(w)}  ${oneLine(v.reason)}`);
      if (v.obstacle !== null) this.log(`  obstacle: ${v.obstacle}`);
      for (const id of v.evidence) {
        const e = byId.get(id);
        if (e !== undefined) this.log(`  ${oneLine(e.query) || '(no query)'} @ ${e.at} (${e.source}): ${oneLine(e.excerpt)}`);
      }
    }
    this.log(
      recorded
        ? `recorded 1 check.started and ${r.verdicts.length} check.finished event(s) (actor cli)`
        : 'nothing recorded (add --record to write check events to the ledger)',
    );
  }
}
