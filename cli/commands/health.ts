import { Flags } from '@oclif/core';
import type { Status } from '../../host/status/status.service.ts';
import { CliProblem, EXIT_USAGE, ServiceCommand, readConfig } from '../base.ts';

export interface HealthResult {
  ok: boolean;
  url: string;
  health: unknown;
  status: Status | null;
  problem: string | null;
}

export default class Health extends ServiceCommand {
  static override summary = 'Ask a running service whether it is up (GET /health and GET /v1/status)';
  static override description = 'Exits 1 when the service cannot be reached or does not answer ok. Needs no token.';
  static override examples = ['<%= config.bin %> health', '<%= config.bin %> health --url https://oncall.bank.example --json'];
  static override enableJsonFlag = true;
  static override flags = {
    url: Flags.string({ description: 'base URL of the service [default: http://127.0.0.1:$SERVICE_PORT, port 8700 when unset]' }),
    timeout: Flags.integer({ description: 'seconds to wait for each answer', default: 5, min: 1, max: 300 }),
  };

  async run(): Promise<HealthResult> {
    const { flags } = await this.parse(Health);
    const base = (flags.url ?? `http://127.0.0.1:${readConfig().port}`).replace(/\/+$/, '');
    if (!/^https?:\/\/[^/]/.test(base) || !URL.canParse(base))
      throw new CliProblem('bad_url', `--url must be an http:// or https:// address, not ${base}`, EXIT_USAGE);
    const get = async (path: string): Promise<{ status: number; body: unknown }> => {
      const res = await fetch(base + path, { signal: AbortSignal.timeout(flags.timeout * 1000), headers: { accept: 'application/json' } });
      const text = await res.text();
      try {
        return { status: res.status, body: JSON.parse(text) as unknown };
      } catch {
        return { status: res.status, body: text.slice(0, 200) };
      }
    };

    let health: { status: number; body: unknown };
    try {
      health = await get('/health');
    } catch (e) {
      const problem = `cannot reach the service at ${base}: ${reason(e)}; is it running? (choose another with --url or SERVICE_PORT)`;
      this.logToStderr(problem);
      return this.outcome({ ok: false, url: base, health: null, status: null, problem }, false);
    }
    const up = health.status === 200 && (health.body as { status?: unknown } | null)?.status === 'ok';
    let status: Status | null = null;
    let problem: string | null = up ? null : `GET ${base}/health answered ${health.status} ${JSON.stringify(health.body)}`;
    try {
      const res = await get('/v1/status');
      if (res.status === 200) status = res.body as Status;
      else problem ??= `GET ${base}/v1/status answered ${res.status}`;
    } catch (e) {
      problem ??= `GET ${base}/v1/status failed: ${reason(e)}`;
    }
    if (problem !== null) this.logToStderr(`not ok: ${problem}`);
    else if (status !== null) {
      this.log(`ok: ${base} is up`);
      this.log(`  version      ${status.version}`);
      this.log(`  fingerprint  ${status.fingerprint}`);
      this.log(`  mode         ${status.mode}`);
      this.log(
        `  licence      ${status.licence.state}${status.licence.customer === null ? '' : ` (${status.licence.customer}, expires ${status.licence.expires_at})`}`,
      );
      this.log(`  ledger head  seq ${status.ledger_head.seq}`);
    }
    return this.outcome({ ok: problem === null, url: base, health: health.body, status, problem }, problem === null);
  }
}

function reason(e: unknown): string {
  if (e instanceof Error && e.name === 'TimeoutError') return 'no answer in time';
  const cause = (e as { cause?: { code?: string; message?: string } } | null)?.cause;
  return cause?.code ?? cause?.message ?? (e instanceof Error ? e.message : String(e));
}
