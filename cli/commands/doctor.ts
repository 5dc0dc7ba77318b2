import { Flags } from '@oclif/core';
import type { DoctorReport } from '../../host/doctor/doctor.service.ts';
import { CliProblem, EXIT_USAGE, ServiceCommand, readConfig } from '../base.ts';

const MARK = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' } as const;

/** The report, and where it came from: the running service, or this process on its own. */
export type DoctorResult = DoctorReport & {
  /** The service asked (`GET <url>/v1/doctor?fresh=1`), or null when this process judged alone. */
  service_url: string | null;
  /** Why the service was not asked or did not answer; null when it answered. */
  service_problem: string | null;
};

export default class Doctor extends ServiceCommand {
  static override summary = 'Check this install: database, migrations, plugins, ledger, tokens';
  static override description =
    'Asks the running service first (GET /v1/doctor?fresh=1 on http://127.0.0.1:$SERVICE_PORT, with SERVICE_ADMIN_TOKEN or --token), ' +
    "so that the report judges the service's own environment. When the service does not answer, or there is no token it " +
    'accepts, or with --local, runs the same checks in this process on the database the SERVICE_* variables name, and says ' +
    "that it judged this CLI process's environment. It reports pending migrations but never applies them. Exits 1 when any " +
    'check fails; a warning does not.';
  static override examples = ['<%= config.bin %> doctor', '<%= config.bin %> doctor --json', '<%= config.bin %> doctor --local'];
  static override enableJsonFlag = true;
  static override flags = {
    local: Flags.boolean({ description: "judge this CLI process's environment only; do not ask the running service", default: false }),
    url: Flags.string({ description: 'base URL of the running service [default: http://127.0.0.1:$SERVICE_PORT, port 8700 when unset]' }),
    token: Flags.string({ description: 'admin token for GET /v1/doctor [default: SERVICE_ADMIN_TOKEN]' }),
    timeout: Flags.integer({ description: 'seconds to wait for the service', default: 30, min: 1, max: 300 }),
  };

  async run(): Promise<DoctorResult> {
    const { flags } = await this.parse(Doctor);
    const config = readConfig();
    let result: DoctorResult | null = null;
    let problem: string | null = null;
    let url: string | null = null;
    if (!flags.local) {
      url = (flags.url ?? `http://127.0.0.1:${config.port}`).replace(/\/+$/, '');
      if (!/^https?:\/\/[^/]/.test(url) || !URL.canParse(url))
        throw new CliProblem('bad_url', `--url must be an http:// or https:// address, not ${url}`, EXIT_USAGE);
      const { askService } = await import('../service-doctor.ts');
      const asked = await askService(url, flags.token ?? config.adminToken, flags.timeout);
      if (asked.report !== null) result = { ...asked.report, service_url: url, service_problem: null };
      else problem = asked.problem;
    }
    result ??= { ...(await this.judgeHere()), service_url: null, service_problem: problem };

    if (result.judged_by === 'service') this.log(`Report of the running service at ${url} (GET /v1/doctor): it judges ${result.judged}.\n`);
    else {
      if (problem !== null) this.log(`${problem}.`);
      this.log(`Judged by ${result.judged}.\n`);
    }
    const width = Math.max(...result.checks.map((c) => c.name.length));
    for (const c of result.checks) this.log(`${MARK[c.level]}  ${c.name.padEnd(width)}  ${c.detail}`);
    const extra = result.components.filter((c) => !result.checks.some((k) => k.name === c.name));
    for (const c of extra) this.log(`${MARK[c.status]}  ${c.name.padEnd(width)}  ${c.detail}${c.fix === null ? '' : ` (fix: ${c.fix})`}`);
    const failed = result.checks.filter((c) => !c.ok).length + extra.filter((c) => c.status === 'fail').length;
    const warned = result.checks.filter((c) => c.level === 'warn').length + extra.filter((c) => c.status === 'warn').length;
    const total = result.checks.length + extra.length;
    this.log(failed > 0 ? `\n${failed} of ${total} checks failed` : `\nall ${total} checks passed${warned > 0 ? ` (${warned} with a warning)` : ''}`);
    return this.outcome(result, result.ok);
  }

  /** The checks run in this process, on the database the SERVICE_* variables name. */
  private async judgeHere(): Promise<DoctorReport> {
    const config = readConfig();
    const [
      { withContext },
      { doctorDeps, runDoctor },
      { readInstall },
      { loadPlugins, pluginDirs },
      { silentLogger },
      { systemClock },
      { PLUGIN_API_VERSION },
    ] = await Promise.all([
      import('../context.ts'),
      import('../../host/doctor/doctor.service.ts'),
      import('../../host/install/identity.ts'),
      import('../../host/plugins/loader.ts'),
      import('../../host/log.ts'),
      import('../../host/clock.ts'),
      import('../../host/version.ts'),
    ]);
    // Judged on the database as it is: only the ledger's check needs the service's areas (and a started install).
    return withContext(config, (ctx) =>
      runDoctor(
        doctorDeps({
          db: ctx.db,
          config,
          installs: { get: () => readInstall(ctx.db) },
          clock: systemClock,
          judge: 'cli',
          plugins: () => loadPlugins({ dirs: pluginDirs(config), log: silentLogger(), hostApi: PLUGIN_API_VERSION }),
          verifyLedger: async () => (await ctx.app()).verifyLedger(),
        }),
      ),
    );
  }
}
