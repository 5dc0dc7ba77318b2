import type { CauseDefinition, CheckAnswer, CheckContext, EvidenceInput, Remedy } from '../../../host/plugins/contract.ts';

/** The most of the answer's body quoted in the evidence. */
const EXCERPT_MAX = 300;

/**
 * `http/endpoint-down`: a GET of the service's health URL (from the estate) gets no answer, or
 * an answer that is not 2xx, within `timeout_s`. A redirect is not followed and is not healthy.
 * See README.md.
 */
export const endpointDown: CauseDefinition = {
  id: 'http/endpoint-down',
  title: 'Health endpoint not answering 2xx',
  specificity: 40,
  applies: { always: true },
  reads: ['http'],
  settings: { timeout_s: 5 },
  check,
};

async function check(ctx: CheckContext): Promise<CheckAnswer> {
  const name = ctx.service.name;
  const url = ctx.service.health_url;
  if (url === null || url.trim() === '')
    return { verdict: 'unknown', obstacle: "the data isn't there", reason: `The estate gives ${name} no health URL: add health_url to its entry.` };
  if (!/^https?:\/\//i.test(url) || !URL.canParse(url))
    return {
      verdict: 'unknown',
      obstacle: "the data isn't there",
      reason: `The estate's health URL of ${name} is not an http or https address: correct health_url in its entry.`,
    };
  const t = ctx.settings.timeout_s;
  const timeout = typeof t === 'number' && t > 0 ? t : 5;
  const r = await ctx.http.get(url, { timeout_s: timeout });
  const { cut } = ctx.lib.text;
  const evidence: EvidenceInput = {
    source: r.source,
    kind: 'http',
    query: r.query,
    at: r.at,
    observed: r.answered
      ? { status: r.status, took_ms: r.took_ms, excerpt: cut(r.excerpt, EXCERPT_MAX) }
      : { status: null, took_ms: r.took_ms, failure: r.failure, problem: r.problem },
    excerpt: r.answered
      ? `${r.query} answered ${r.status} in ${r.took_ms} ms${r.excerpt.trim() === '' ? '' : `: ${cut(r.excerpt.trim(), 200)}`}`
      : `${r.query} ${failed(r.failure, r.took_ms, timeout)}: ${r.problem}`,
  };
  const verification = { cause: 'http/endpoint-down', expect: 'ruled_out' as const };
  if (!r.answered)
    return {
      verdict: 'holds',
      reason: `The health URL of ${name} ${failed(r.failure, r.took_ms, timeout)}: ${r.problem}.`,
      evidence: [evidence],
      verification,
      ...restartRunbook(ctx.service),
    };
  if (r.status >= 200 && r.status < 300)
    return { verdict: 'ruled_out', reason: `The health URL of ${name} answered ${r.status} in ${r.took_ms} ms (within ${timeout} s).`, evidence: [evidence] };
  return {
    verdict: 'holds',
    reason: `The health URL of ${name} answered ${r.status}, not 2xx${r.status >= 300 && r.status < 400 ? ' (a redirect, which is not followed)' : ''}.`,
    evidence: [evidence],
    verification,
    ...restartRunbook(ctx.service),
  };
}

/** What happened to a request that got no answer, as it happened: a refusal is not a timeout. */
function failed(failure: string, tookMs: number, timeoutS: number): string {
  switch (failure) {
    case 'timeout':
      return `got no answer within ${timeoutS} s`;
    case 'refused':
      return `refused the connection after ${tookMs} ms`;
    case 'unresolved':
      return `has a host name that could not be resolved (after ${tookMs} ms)`;
    case 'tls':
      return `failed its TLS handshake after ${tookMs} ms`;
    case 'reset':
      return `closed the connection without an answer after ${tookMs} ms`;
    default:
      return `could not be reached (after ${tookMs} ms)`;
  }
}

/** The remedy when the estate links the service to a runbook named `restart` (acting runs it through that link's connector). */
function restartRunbook(service: CheckContext['service']): { remedy?: Remedy } {
  return service.links.some((l) => l.kind === 'runbook' && l.name === 'restart')
    ? { remedy: { action: 'runbook', params: { name: 'restart' }, undo: 'a restart is not undone' } }
    : {};
}
