import { Args } from '@oclif/core';
import { plainLine } from '../../../host/escape.ts';
import type { ConnectorView, TestReport } from '../../../host/connectors/connectors.service.ts';
import { ServiceCommand, readConfig } from '../../base.ts';

export interface ConnectorsCheckResult {
  ok: boolean;
  connector: Pick<ConnectorView, 'name' | 'kind' | 'source' | 'version' | 'state' | 'last_problem' | 'last_checked_at'>;
  check: TestReport | null;
}

export default class ConnectorsCheck extends ServiceCommand {
  static override summary = 'Check one connector now: its health call, cut off at its timeout';
  static override description =
    'Runs the same check as POST /v1/connectors/{name}/check, in this process, with the connector as saved (or as connectors.json says), ' +
    "and records the outcome as the connector's last check (what GET /v1/connectors and doctor show). Exits 1 when the check fails or there is no such connector.";
  static override examples = ['<%= config.bin %> connectors check prometheus', '<%= config.bin %> connectors check prometheus --json'];
  static override enableJsonFlag = true;
  static override args = {
    name: Args.string({ description: 'the connector name (oncall connectors list)', required: true }),
  };

  async run(): Promise<ConnectorsCheckResult> {
    const { args } = await this.parse(ConnectorsCheck);
    const config = readConfig();
    const [{ withContext }, { asProblem }] = await Promise.all([import('../../context.ts'), import('../../ops.ts')]);
    const checked = await withContext(config, async (ctx) => (await ctx.app()).connectors.check(args.name, null).catch(asProblem));
    const { check, name, kind, source, version, state, last_problem, last_checked_at } = checked;
    const ok = check !== null && check.ok;
    if (ok) this.log(`ok: ${name} (${kind}) answered in ${check.took_ms} ms`);
    else this.log(`PROBLEM: ${name} (${kind}): ${plainLine(check?.problem ?? last_problem ?? 'cannot be checked')}`);
    return this.outcome({ ok, connector: { name, kind, source, version, state, last_problem, last_checked_at }, check }, ok);
  }
}
