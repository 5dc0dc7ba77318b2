import { ServiceCommand, readConfig } from '../../base.ts';

/** One pack as `oncall packs list --json` prints it (the shape issue 14 fixes). */
export interface PackListed {
  name: string | null;
  version: string | null;
  causes: Array<{ id: string; title: string; reads: string[] }>;
  state: 'loaded' | 'broken';
  problem: string | null;
}

export default class PacksList extends ServiceCommand {
  static override summary = 'List the check packs: their causes, what each reads, loaded or broken';
  static override description =
    'Loads the packs as the service does at start (packs/ and SERVICE_PLUGINS_DIR), in this process, without the database: ' +
    'each pack with its version, its causes (id, title, the connector capabilities each reads), and whether it loaded or is broken, with the problem. ' +
    'Exits 1 when a pack is broken (the service skips it).';
  static override examples = ['<%= config.bin %> packs list', '<%= config.bin %> packs list --json'];
  static override enableJsonFlag = true;

  async run(): Promise<PackListed[]> {
    await this.parse(PacksList);
    const config = readConfig();
    const [{ loadPlugins, pluginDirs }, { CauseCatalogue }, { silentLogger }, { PLUGIN_API_VERSION }] = await Promise.all([
      import('../../../host/plugins/loader.ts'),
      import('../../../host/investigation/catalogue.ts'),
      import('../../../host/log.ts'),
      import('../../../host/version.ts'),
    ]);
    const registry = await loadPlugins({ dirs: pluginDirs(config), log: silentLogger(), hostApi: PLUGIN_API_VERSION });
    const packs: PackListed[] = new CauseCatalogue(registry).packs.map((p) => ({
      name: p.name,
      version: p.version,
      causes: p.causes.map((c) => ({ id: c.id, title: c.title, reads: [...c.reads] })),
      state: p.state,
      problem: p.problem,
    }));
    if (packs.length === 0) this.log('no packs installed (packs/ and SERVICE_PLUGINS_DIR hold none)');
    packs.forEach((p, i) => {
      if (i > 0) this.log('');
      const what = `${p.name ?? '(unnamed)'} ${p.version ?? '(no version)'}`;
      if (p.state === 'broken') {
        this.log(`${what}  broken: ${p.problem ?? 'unknown problem'}`);
        return;
      }
      this.log(`${what}  loaded, ${p.causes.length} cause(s)`);
      const w = Math.max(0, ...p.causes.map((c) => c.id.length));
      for (const c of p.causes) this.log(`  ${c.id.padEnd(w)}  ${c.title}  (reads: ${c.reads.length === 0 ? 'none' : c.reads.join(', ')})`);
    });
    const broken = packs.filter((p) => p.state === 'broken').length;
    if (broken > 0 && !this.jsonEnabled()) this.logToStderr(`${broken} pack(s) broken: the service skips them`);
    return this.outcome(packs, broken === 0);
  }
}
