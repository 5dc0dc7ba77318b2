import { ServiceCommand, readConfig } from '../base.ts';

export default class Fingerprint extends ServiceCommand {
  static override summary = "Print this install's fingerprint (the same as GET /v1/status)";
  static override description =
    'Read from the database and checked against the install key, so SERVICE_DATA_DIR, SERVICE_DATABASE_URL and SERVICE_SECRET_KEY must be those of the service.';
  static override examples = ['<%= config.bin %> fingerprint', '<%= config.bin %> fingerprint --json'];
  static override enableJsonFlag = true;

  async run(): Promise<{ fingerprint: string }> {
    await this.parse(Fingerprint);
    const config = readConfig();
    const { withContext } = await import('../context.ts');
    const fingerprint = await withContext(config, async (ctx) => (await ctx.app()).identity.fingerprint);
    this.log(fingerprint);
    return { fingerprint };
  }
}
