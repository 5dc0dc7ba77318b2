import { ServiceCommand, readConfig } from '../../base.ts';

export interface EstateBuildResult {
  ok: boolean;
  job: string;
  state: string;
  services: number;
  candidates: number;
  suggestions: number;
}

export default class EstateBuild extends ServiceCommand {
  static override summary = 'Build the estate now: discovery, then the estate assembled from what is known';
  static override description =
    'Runs what POST /v1/estate/build starts, in this process, and waits for it: a discovery job over every connector that can discover ' +
    '(progress also at GET /v1/jobs/{id}), then the estate assembled from the candidates, the human.deploy events and the episodes of the last 30 days. ' +
    'Names found stay candidates until a person adds them; overrides win. Recorded as the admin token. Exits 1 when the job fails or another runs.';
  static override examples = ['<%= config.bin %> estate build', '<%= config.bin %> estate build --json'];
  static override enableJsonFlag = true;

  async run(): Promise<EstateBuildResult> {
    await this.parse(EstateBuild);
    const config = readConfig();
    const [{ withContext }, { openEstate, CLI_PRINCIPAL, asProblem }] = await Promise.all([import('../../context.ts'), import('../../ops.ts')]);
    const result = await withContext(config, async (ctx) => {
      const { estate: area, discovery } = await openEstate(ctx);
      const job = await area.builder.start(CLI_PRINCIPAL).catch(asProblem);
      await area.builder.idle();
      const done = await discovery.job(job.id);
      const estate = await area.estate.estate();
      return {
        job: job.id,
        state: done.state,
        services: estate.services.length,
        candidates: estate.candidates.length,
        suggestions: (await area.estate.suggestions()).length,
      };
    });
    const ok = result.state === 'finished';
    this.log(
      `${ok ? 'ok' : 'PROBLEM'}: job ${result.job} ${result.state}; ${result.services} service(s), ${result.candidates} candidate(s), ${result.suggestions} open suggestion(s)`,
    );
    return this.outcome({ ok, ...result }, ok);
  }
}
