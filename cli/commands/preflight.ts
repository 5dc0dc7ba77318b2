import { Flags } from '@oclif/core';
import { ServiceCommand } from '../base.ts';

export type PreflightName = 'config' | 'data_dir' | 'database' | 'migrations' | 'port' | 'plugins' | 'connectors' | 'mail';

export interface PreflightCheck {
  name: PreflightName;
  ok: boolean;
  level: 'ok' | 'warn' | 'fail';
  detail: string;
}

export interface PreflightReport {
  ok: boolean;
  deep: boolean;
  checks: PreflightCheck[];
}

const MARK = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' } as const;

export default class Preflight extends ServiceCommand {
  static override summary = 'Check the environment before starting the service';
  static override description =
    'Checks, without starting the service and without creating anything: the SERVICE_* configuration, that the data directory is writable, ' +
    'that the database answers and where its migrations stand, that the port is free, and that the plugins load. ' +
    'With --deep also checks every configured connector (recording each as its last check) and the mail state. ' +
    'Exits 1 when a check fails (a warning does not), 2 when the configuration is invalid.';
  static override examples = ['<%= config.bin %> preflight', '<%= config.bin %> preflight --deep --json'];
  static override enableJsonFlag = true;
  static override flags = {
    deep: Flags.boolean({ description: "also check the connectors' health and the mail state (needs an install that has started)", default: false }),
  };

  async run(): Promise<PreflightReport> {
    const { flags } = await this.parse(Preflight);
    const [{ runPreflight }] = await Promise.all([import('../preflight.ts')]);
    const report = await runPreflight(process.env, { deep: flags.deep });
    const width = Math.max(...report.checks.map((c) => c.name.length));
    for (const c of report.checks) this.log(`${MARK[c.level]}  ${c.name.padEnd(width)}  ${c.detail}`);
    const failed = report.checks.filter((c) => !c.ok).length;
    const warned = report.checks.filter((c) => c.level === 'warn').length;
    this.log(
      failed > 0
        ? `\n${failed} of ${report.checks.length} checks failed`
        : `\nready to start: all ${report.checks.length} checks passed${warned > 0 ? ` (${warned} with a warning)` : ''}`,
    );
    if (report.checks[0]?.name === 'config' && !report.checks[0].ok) {
      process.exitCode = 2;
      return report;
    }
    return this.outcome(report, report.ok);
  }
}
