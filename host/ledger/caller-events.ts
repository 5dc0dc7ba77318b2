import { AppError } from '../errors.ts';
import type { ChainHead, EventInput } from './entry.ts';
import type { Ledger } from './ledger.service.ts';

/** The type prefixes a caller may record (the spec's list). */
export const CALLER_PREFIXES = [
  'signal.',
  'retrieval.',
  'model.',
  'check.',
  'decision.',
  'approval.',
  'action.',
  'outcome.',
  'config.',
  'connector.',
  'system.',
  'human.',
] as const;

/**
 * The `data` key the service stamps on every event a caller records (POST /v1/events), naming
 * who recorded it: the ingest token. It is inside the hashed entry, so it cannot be taken off
 * without breaking the chain; the service's own events never carry it.
 */
export const RECORDED_BY = 'recorded_by';
export const INGEST_TOKEN_RECORDER = 'ingest-token';

/** Who recorded an event through POST /v1/events (`ingest-token`), or null for the service's own. */
export function recordedBy(e: { data: Record<string, unknown> }): string | null {
  const v = e.data[RECORDED_BY];
  return typeof v === 'string' ? v : null;
}

/**
 * Actor names the service writes itself, compared without case, spaces or punctuation
 * (`Admin Token`, `admin_token`): a caller never records under one.
 */
const SERVICE_ACTORS = new Set(
  ['system', 'admin-token', 'ingest-token', 'anonymous', 'config-file', 'licence-check', 'licence-limits', 'oncall-service', 'service'].map(squash),
);
/** Prefixes of actor names the service composes (`poller:<connector>`). */
const SERVICE_ACTOR_PREFIXES = ['poller'];
/** An address: something, `@`, something. Every person of the install is known by one. */
const EMAIL_SHAPED = /\S@\S/;
/** Control and invisible formatting characters (zero-width spaces, bidi overrides). */
const HIDDEN = /[\p{Cc}\p{Cf}]/u;

function squash(actor: string): string {
  return actor
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]/gu, '');
}

/** Why a caller may not record under `actor`, or null when it may. */
export function refusedActor(actor: string): string | null {
  if (HIDDEN.test(actor)) return 'actor must not hold control or invisible characters';
  if (EMAIL_SHAPED.test(actor)) return 'actor must not be an e-mail address: a caller cannot record what a person did';
  const key = squash(actor);
  if (key === '') return 'actor must name who did it';
  if (SERVICE_ACTORS.has(key) || SERVICE_ACTOR_PREFIXES.some((p) => key.startsWith(p)))
    return `actor ${actor} names the service itself: a caller cannot record what the service did`;
  return null;
}

/**
 * Events recorded by a caller with the ingest token (POST /v1/events): the type must start with
 * an allowed prefix, the actor may name neither a person nor the service, and the event is stored
 * with `data.recorded_by = "ingest-token"` (a caller-supplied `recorded_by` is refused). Such an
 * event is evidence with that provenance: never the service's own action, approval or outcome.
 */
export class CallerEvents {
  readonly #ledger: Pick<Ledger, 'append'>;

  constructor(ledger: Pick<Ledger, 'append'>) {
    this.#ledger = ledger;
  }

  record(input: EventInput): Promise<ChainHead> {
    if (!CALLER_PREFIXES.some((p) => input.type.startsWith(p)))
      throw new AppError('invalid_event_type', `type must start with one of ${CALLER_PREFIXES.join(' ')}`);
    const refused = refusedActor(input.actor);
    if (refused !== null) throw new AppError('reserved_actor', refused);
    const data = input.data ?? {};
    if (RECORDED_BY in data) throw new AppError('invalid_body', `data.${RECORDED_BY} is set by the service: who recorded the event`);
    return this.#ledger.append({ ...input, data: { ...data, [RECORDED_BY]: INGEST_TOKEN_RECORDER } });
  }
}
