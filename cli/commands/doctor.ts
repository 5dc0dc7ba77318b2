import type { DoctorReport } from '../../host/doctor/doctor.service.ts';
import { ServiceCommand, readConfig } from '../base.ts';

const MARK = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' } as const;

export default class Doctor extends ServiceCommand {
  static override summary = 'Check this install: database, migrations, plugins, ledger, tokens';
  static override description =
    'Runs the same checks as GET /v1/doctor, in this process, on the database the SERVICE_* variables name. ' +
    'It reports pending migrations but never applies them. Exits 1 when any check fails; a warning does not.';
  static override examples = ['<%= config.bin %> doctor', '<%= config.bin %> doctor --json'];
  static override enableJsonFlag = true;

  async run(): Promise<DoctorReport> {
    await this.parse(Doctor);
    const config = readConfig();
    const [{ withContext }, { doctorDeps, runDoctor }, { loadPlugins, pluginDirs }, { silentLogger }, { systemClock }, { PLUGIN_API_VERSION }] = await Promise.all([
      import('../context.ts'),
      import('../../host/doctor/doctor.service.ts'),
      import('../../host/plugins/loader.ts'),
      import('../../host/log.ts'),
      import('../../host/clock.ts'),
      import('../../host/version.ts'),
    ]);
    const report = await withContext(config, (ctx) =>
      runDoctor(
        doctorDeps({
          db: ctx.db,
          config,
          installs: ctx.installs,
          clock: systemClock,
          plugins: () => loadPlugins({ dirs: pluginDirs(config), log: silentLogger(), hostApi: PLUGIN_API_VERSION }),
          verifyLedger: () => ctx.verifyLedger(),
        }),
      ),
    );
    const width = Math.max(...report.checks.map((c) => c.name.length));
    for (const c of report.checks) this.log(`${MARK[c.level]}  ${c.name.padEnd(width)}  ${c.detail}`);
    const failed = report.checks.filter((c) => !c.ok).length;
    const warned = report.checks.filter((c) => c.level === 'warn').length;
    this.log(failed > 0 ? `\n${failed} of ${report.checks.length} checks failed` : `\nall ${report.checks.length} checks passed${warned > 0 ? ` (${warned} with a warning)` : ''}`);
    return this.outcome(report, report.ok);
  }
}
