import { readFileSync } from 'node:fs';
import { Args, Flags } from '@oclif/core';
import { plainLine } from '../../../host/escape.ts';
import { ServiceCommand, readConfig, CliProblem, EXIT_USAGE } from '../../base.ts';

export interface EstateResolveResult {
  ok: boolean;
  placements: Array<{ name: string; fingerprint: string; service: string; rule: string; certain: boolean }>;
}

export default class EstateResolve extends ServiceCommand {
  static override summary = 'Show which service an alert is placed in, by which rule, certain or a match';
  static override description =
    "Runs the resolver intake uses, in this process, against the estate in the service database: the alert's own service when the estate knows it, " +
    "else the estate's alert links (label matchers), else its workload links, else unknown. The alert is read by the normaliser of --source " +
    '(generic by default), from the argument or from --file; nothing is taken in or recorded.';
  static override examples = [
    `<%= config.bin %> estate resolve '{"name":"HighLatency","labels":{"job":"payments-api"}}'`,
    '<%= config.bin %> estate resolve --source alertmanager --file alert.json --json',
  ];
  static override enableJsonFlag = true;
  static override args = { alert: Args.string({ description: 'the alert as JSON (or use --file)', required: false }) };
  static override flags = {
    source: Flags.string({ description: 'the normaliser that reads it, as in POST /v1/alerts/<source>', default: 'generic' }),
    file: Flags.string({ description: 'a file holding the alert body' }),
  };

  async run(): Promise<EstateResolveResult> {
    const { args, flags } = await this.parse(EstateResolve);
    const text = flags.file !== undefined ? readFileSync(flags.file, 'utf8') : args.alert;
    if (text === undefined) throw new CliProblem('no_alert', 'give the alert as JSON or with --file', EXIT_USAGE);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new CliProblem('invalid_json', 'the alert is not JSON', EXIT_USAGE);
    }
    const config = readConfig();
    const [{ withContext }, { openEstate, asProblem }, { Normalisers }] = await Promise.all([
      import('../../context.ts'),
      import('../../ops.ts'),
      import('../../../host/intake/normalise.ts'),
    ]);
    const placements = await withContext(config, async (ctx) => {
      const { estate: area, plugins } = await openEstate(ctx);
      const signals = (() => {
        try {
          return new Normalisers(plugins.loaded).normalise(flags.source, body);
        } catch (e) {
          return asProblem(e);
        }
      })();
      await area.estate.ready();
      return signals.map((s) => {
        const p = area.estate.place(s);
        return { name: s.name, fingerprint: s.fingerprint, service: p.service ?? 'unknown', rule: p.rule, certain: p.certain };
      });
    });
    for (const p of placements) this.log(`${plainLine(p.name)} → ${plainLine(p.service)} (${p.rule}, ${p.certain ? 'certain' : 'a match'})`);
    return this.outcome({ ok: true, placements }, true);
  }
}
