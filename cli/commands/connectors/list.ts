import { plainLine } from '../../../host/escape.ts';
import type { ConnectorView } from '../../../host/connectors/connectors.service.ts';
import { ServiceCommand, readConfig } from '../../base.ts';

export interface ConnectorsListResult {
  ok: boolean;
  connectors: Array<Pick<ConnectorView, 'name' | 'kind' | 'source' | 'version' | 'state' | 'last_problem' | 'last_checked_at'>>;
  file: { path: string; problem: string | null } | null;
}

export default class ConnectorsList extends ServiceCommand {
  static override summary = 'List the configured connectors and the last problem of each';
  static override description =
    'Reads the service database and connectors.json (SERVICE_CONFIG_DIR), as GET /v1/connectors does, with the service running or stopped. ' +
    'Settings are not printed (secrets never are). Exits 1 when a connector has a problem or connectors.json cannot be read.';
  static override examples = ['<%= config.bin %> connectors list', '<%= config.bin %> connectors list --json'];
  static override enableJsonFlag = true;

  async run(): Promise<ConnectorsListResult> {
    await this.parse(ConnectorsList);
    const config = readConfig();
    const { withContext } = await import('../../context.ts');
    const listed = await withContext(config, async (ctx) => (await ctx.app()).connectors.list());
    const connectors = listed.connectors.map((c) => ({
      name: c.name,
      kind: c.kind,
      source: c.source,
      version: c.version,
      state: c.state,
      last_problem: c.last_problem,
      last_checked_at: c.last_checked_at,
    }));
    if (listed.file?.problem != null) this.logToStderr(`connectors.json (${listed.file.path}): ${listed.file.problem}`);
    if (connectors.length === 0) this.log('no connectors configured');
    else {
      const w = (k: 'name' | 'kind' | 'state') => Math.max(k.length, ...connectors.map((c) => c[k].length));
      const [wn, wk, ws] = [w('name'), w('kind'), w('state')];
      this.log(`${'NAME'.padEnd(wn)}  ${'KIND'.padEnd(wk)}  ${'SOURCE '}  ${'STATE'.padEnd(ws)}  LAST CHECKED              PROBLEM`);
      for (const c of connectors) {
        this.log(
          `${c.name.padEnd(wn)}  ${c.kind.padEnd(wk)}  ${c.source.padEnd(7)}  ${c.state.padEnd(ws)}  ${(c.last_checked_at ?? '-').padEnd(24)}  ${plainLine(c.last_problem ?? '')}`.trimEnd(),
        );
      }
    }
    const ok = connectors.every((c) => c.state !== 'problem') && listed.file?.problem == null;
    return this.outcome({ ok, connectors, file: listed.file }, ok);
  }
}
