import type { ActionRequest, ActionResult, ConnectorContext } from '../../../host/plugins/contract.ts';
import { DEFAULT_TIMEOUT_S, type Settings } from './settings.ts';
import { join, shown } from './urls.ts';

/**
 * The `runbook` action: sends the episode's context to a runbook endpoint (Rundeck, AWX,
 * Jenkins, any webhook-triggered job) under `base_url`, as JSON
 * `{runbook, episode: {id, service, alerts, url, summary}, key, dry_run}`, with the method, the
 * headers and the token of the settings. `rehearse` sends the same with `dry_run: true`, only
 * when the settings say the endpoint supports it (`runbook_dry_run`). Not reversible. See README.md.
 */

const RUNBOOK_NAME = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/;
const MAX_BODY_BYTES = 64 * 1024;
const EXCERPT = 300;

/** What rehearse answers when the endpoint does not declare dry runs. */
export const NOT_REHEARSABLE = 'not rehearsable: the endpoint does not declare dry runs';

/** Sends the runbook request for real. */
export function actRunbook(ctx: ConnectorContext, action: ActionRequest): Promise<ActionResult> {
  return send(ctx, action, false);
}

/** Sends the same request with `dry_run: true`, when the endpoint supports it; else says it cannot be rehearsed. */
export function rehearseRunbook(ctx: ConnectorContext, action: ActionRequest): Promise<ActionResult> {
  if ((ctx.settings as unknown as Settings).runbook_dry_run !== true) return Promise.resolve({ ok: false, problem: NOT_REHEARSABLE, not_rehearsable: true });
  return send(ctx, action, true);
}

function excerptOf(text: string, truncated: boolean): string {
  const flat = text.trim().replace(/\s+/g, ' ');
  if (flat === '') return 'no body';
  return flat.length > EXCERPT || truncated ? `${flat.slice(0, EXCERPT)}…` : flat;
}

async function send(ctx: ConnectorContext, action: ActionRequest, dryRun: boolean): Promise<ActionResult> {
  const s = ctx.settings as unknown as Settings;
  const { name, path } = action.params;
  if (typeof name !== 'string' || !RUNBOOK_NAME.test(name)) return { ok: false, problem: 'name must be the runbook, such as restart' };
  if (path !== undefined && (typeof path !== 'string' || !path.startsWith('/'))) return { ok: false, problem: 'path must start with /, such as /jobs/restart' };
  const where = typeof path === 'string' ? path : (s.runbook_path ?? '/');
  const url = join(s.base_url, where);
  if (new URL(url).origin !== new URL(s.base_url).origin) return { ok: false, problem: 'the runbook path leaves base_url' };
  const { id, service, alerts, url: episodeUrl, summary } = action.episode;
  const token = s.runbook_token ?? s.bearer_token;
  const r = await ctx.http.request({
    method: s.runbook_method ?? 'POST',
    url,
    headers: {
      accept: 'application/json, text/plain;q=0.9, */*;q=0.5',
      'user-agent': 'oncall-connector-http/1.1',
      ...(s.headers ?? {}),
      'content-type': 'application/json',
      'idempotency-key': action.key,
    },
    ...(token === undefined ? {} : { auth: { bearer: token } }),
    body: JSON.stringify({ runbook: name, episode: { id, service, alerts, url: episodeUrl, summary }, key: action.key, dry_run: dryRun }),
    timeoutS: s.timeout_s ?? DEFAULT_TIMEOUT_S,
    maxBodyBytes: MAX_BODY_BYTES,
  });
  if (!r.ok) return { ok: false, problem: r.problem };
  const excerpt = excerptOf(r.text, r.truncated);
  const at = shown(url);
  if (r.status >= 200 && r.status < 300)
    return { ok: true, problem: null, shown: `${dryRun ? 'dry run of' : 'ran'} runbook ${name}: HTTP ${r.status} from ${at}: ${excerpt}` };
  if (r.status >= 300 && r.status < 400)
    return {
      ok: false,
      problem: `${at} redirects (HTTP ${r.status}) to ${r.headers.location ?? 'nowhere'}; point base_url or runbook_path at the final address`,
    };
  if (r.status === 401) return { ok: false, problem: `authentication failed (HTTP 401 from ${at}); check runbook_token` };
  if (r.status === 403) return { ok: false, problem: `access refused (HTTP 403 from ${at})` };
  return { ok: false, problem: `runbook ${name} failed: HTTP ${r.status} from ${at}: ${excerpt}` };
}
