import type { Server } from 'restify';
import { AppError } from '../errors.ts';
import type { Guard } from '../http/guard.ts';
import { optionalInt, optionalText, pageLimit, queryOf } from '../http/query.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import type { CallerEvents } from './caller-events.ts';
import type { EventInput } from './entry.ts';
import type { Ledger } from './ledger.service.ts';
import { HASH_PATTERN, type Expectation, type VerifyOptions, type VerifyReport } from './verify.ts';
import { readJson } from '../http/body.ts';

export const MAX_LEDGER_PAGE = 2000;
const DEFAULT_LEDGER_PAGE = 100;

const eventBody = bodyValidator<EventInput>({
  type: 'object',
  additionalProperties: false,
  required: ['type', 'actor'],
  properties: {
    type: { type: 'string', minLength: 1, maxLength: 100 },
    actor: { type: 'string', minLength: 1, maxLength: 255 },
    reason: { type: 'string', maxLength: 4000 },
    data: { type: 'object' },
    trace: { type: 'string', minLength: 1, maxLength: 128 },
  },
});

export function ledgerRoutes(
  server: Server,
  deps: { log: Logger; guard: Guard; ledger: Ledger; callers: CallerEvents; verify: (opts?: VerifyOptions) => Promise<VerifyReport> },
): void {
  const { log, guard, ledger } = deps;

  server.get(
    '/v1/ledger',
    route(
      log,
      async (req) => {
        await guard.bearer(req);
        const q = queryOf(req);
        const order = q.get('order') ?? 'desc';
        if (order !== 'asc' && order !== 'desc') throw new AppError('invalid_parameter', 'order must be asc or desc');
        const limit = pageLimit(q, DEFAULT_LEDGER_PAGE, MAX_LEDGER_PAGE);
        const result = await ledger.find({
          type: optionalText(q, 'type', 100),
          actor: optionalText(q, 'actor', 255),
          trace: optionalText(q, 'trace', 128),
          q: optionalText(q, 'q', 200),
          beforeSeq: optionalInt(q, 'before_seq', 0),
          afterSeq: optionalInt(q, 'after_seq', 0),
          limit,
          order,
        });
        return [200, result];
      },
      { query: ['type', 'trace', 'actor', 'q', 'before_seq', 'after_seq', 'limit', 'order'] },
    ),
  );

  server.get(
    '/v1/ledger/verify',
    route(
      log,
      async (req) => {
        await guard.bearer(req);
        const q = queryOf(req);
        const expect = expectation(optionalInt(q, 'expect_seq', 1), optionalText(q, 'expect_hash', 64));
        return [200, await deps.verify(expect === undefined ? {} : { expect })];
      },
      { query: ['expect_seq', 'expect_hash'] },
    ),
  );

  server.post(
    '/v1/events',
    route(log, async (req) => {
      guard.ingest(req);
      const input = eventBody(await readJson(req));
      const { seq, hash } = await deps.callers.record(input);
      return [201, { seq, hash }];
    }),
  );
}

/**
 * An auditor's head kept elsewhere: both halves or neither. The hash is hex in either case and
 * compared in lower case, as the ledger writes it.
 */
export function expectation(seq: number | undefined, hash: string | undefined): Expectation | undefined {
  if (seq === undefined && hash === undefined) return undefined;
  if (seq === undefined || hash === undefined) throw new AppError('invalid_parameter', 'expect_seq and expect_hash go together');
  const lower = hash.toLowerCase();
  if (!HASH_PATTERN.test(lower)) throw new AppError('invalid_parameter', 'expect_hash must be 64 hex digits');
  return { seq, hash: lower };
}
