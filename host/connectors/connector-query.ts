import { AppError } from '../errors.ts';
import type { Principal } from '../identity/principal.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { ConnectorQueryRequest } from '../plugins/contract.ts';
import { clip } from '../text.ts';
import { callable, callConnector, clipProblem, jsonOnly } from './connector-calls.ts';
import { failure, type ConnectorFailure } from './connector-failure.ts';
import type { ConnectorStore } from './connectors.store.ts';
import { cutOffMs } from './runner.ts';
import { clone, scrubJson, scrubText } from './secrets.ts';

export interface QueryReport {
  ok: boolean;
  problem: string | null;
  data: unknown;
  took_ms: number;
  timeout_s: number;
}

const MAX_DATA_BYTES = 1024 * 1024;

/**
 * Runs a read-only query on a configured connector (`POST /v1/connectors/{name}/query`), cut
 * off at its timeout; the answer is scrubbed of the connector's secrets and recorded in the ledger.
 * A connector that cannot be used is 400 `invalid_settings`; a kind without `query` is 400 `query_not_supported`.
 */
export async function queryConnector(
  d: { store: ConnectorStore; ledger: Ledger; log: Logger },
  name: string,
  request: ConnectorQueryRequest,
  who: Principal,
): Promise<QueryReport> {
  const r = await d.store.resolve(name);
  if (r.fault !== null || r.type === null || r.settings === null)
    throw new AppError('invalid_settings', `connector ${name} cannot be used: ${r.fault ?? 'its settings are incomplete'}`);
  const fn = r.type.plugin.query;
  if (typeof fn !== 'function') throw new AppError('query_not_supported', `connectors of kind ${r.kind} do not answer queries`);
  const ready = callable(r, 'query', null, '');
  if (!ready.ok) throw new AppError('invalid_settings', `connector ${name} cannot be used: ${ready.failure.problem}`);
  const { c } = ready;
  const timeoutMs = cutOffMs(c.settings);
  const started = performance.now();
  const outcome = await callConnector({
    job: 'query',
    c,
    timeoutMs,
    log: d.log,
    call: (ctx) => (fn as (x: unknown, q: unknown) => unknown).call(c.type.plugin, ctx, clone(request)),
  });
  const took = Math.round(performance.now() - started);
  const answered = outcome.ok ? readAnswer(outcome.value, c.secrets) : { failure: outcome.failure, data: null };
  const report: QueryReport = {
    ok: answered.failure === null,
    problem: answered.failure === null ? null : clipProblem(answered.failure.problem),
    data: answered.data,
    took_ms: took,
    timeout_s: timeoutMs / 1000,
  };
  await d.ledger.append({
    type: 'connector.queried',
    actor: who.actor,
    reason: report.ok ? `query on connector ${name}` : `query on connector ${name} failed: ${report.problem}`,
    data: { name, kind: r.kind, query: clip(scrubText(request.query, c.secrets), 2000), ok: report.ok, problem: report.problem },
  });
  return report;
}

/**
 * The plugin's `{ok, problem, data}` checked and scrubbed: `data` is kept with a failure the
 * plugin reported (it may say why), dropped when over MAX_DATA_BYTES.
 */
function readAnswer(value: unknown, secrets: string[]): { failure: ConnectorFailure | null; data: unknown } {
  const v = value as { ok?: unknown; problem?: unknown; data?: unknown } | null;
  if (typeof v !== 'object' || v === null || typeof v.ok !== 'boolean')
    return { failure: failure('query', 'bad_answer', 'the query answered something that is not {ok, problem, data}'), data: null };
  const data = scrubJson(jsonOnly(v.data), secrets);
  if (JSON.stringify(data ?? null).length > MAX_DATA_BYTES)
    return { failure: failure('query', 'too_large', `the answer is larger than ${MAX_DATA_BYTES / 1024} KiB; narrow the query`), data: null };
  if (!v.ok)
    return {
      failure: failure(
        'query',
        'said_no',
        scrubText(typeof v.problem === 'string' && v.problem !== '' ? v.problem : 'the query failed without a reason', secrets),
      ),
      data: data ?? null,
    };
  return { failure: null, data: data ?? null };
}
