import type {
  CheckContext,
  CheckMoment,
  CheckService,
  CheckSignal,
  ChangesReader,
  HttpReader,
  LedgerReader,
  MetricsReader,
  Obstacle,
  PluginLog,
  ReadCapability,
  CapabilityReading,
  RelatedEpisode,
} from '../plugins/contract.ts';
import { packLibrary } from '../plugins/lib/index.ts';
import type { Cause } from './catalogue.ts';
import { readFailure } from './read-failure.ts';

/** The readers of one check, bound to a service's connectors (live) or to recorded answers (replay). */
export interface Readers {
  metrics: MetricsReader;
  changes: ChangesReader;
  http: HttpReader;
  ledger: LedgerReader;
  /**
   * Any capability a connector declares (plugin API 1.5): the request as the check gave it and,
   * for a capability that reads only declared things, the reading pack's declaration it names.
   */
  read(capability: ReadCapability, request: Record<string, unknown>, declared?: DeclaredRead): Promise<CapabilityReading>;
}

/** A pack's declaration a read names (`sql` statements): the connector receives it, never text from the check. */
export interface DeclaredRead {
  pack: string;
  name: string;
  value: Record<string, unknown>;
}

/** Where a check's readers come from: made per check with its abort signal. */
export interface ReaderSource {
  /** Why a capability cannot be read for this service (no connector, several), or null when it can. */
  obstacle(capability: ReadCapability): { obstacle: Obstacle; problem: string } | null;
  readers(signal: AbortSignal, deadline: number): Readers;
  /** The secret values of the connectors read, blanked out of evidence. */
  secrets(): string[];
}

/** What the retrieval step gathered for an episode (or for an ad-hoc run). */
export interface CheckInputs {
  episode: { id: string | null; service: string; opened_at: string };
  /** The moment the checks read (metrics at it, changes up to it): one per run, never mixed. */
  at: string;
  moment: CheckMoment;
  signals: CheckSignal[];
  service: CheckService;
  related: { dependencies: RelatedEpisode[]; history: RelatedEpisode[] };
  /** Per cause id: the estate's `check_settings` for the service. */
  overrides: Record<string, Record<string, number | string | boolean>>;
}

/**
 * The check context of one cause: frozen, with only read methods. A reader of a capability the
 * cause did not declare throws (so a pack cannot read more than it says, and the study's
 * obstacles stay true), as does every reader once the check is cut off.
 */
export function checkContext(cause: Cause, inputs: CheckInputs, source: ReaderSource, log: PluginLog, signal: AbortSignal, deadline: number): CheckContext {
  const r = source.readers(signal, deadline);
  const guard = <F extends (...args: never[]) => Promise<unknown>>(cap: ReadCapability, fn: F): F =>
    (async (...args: Parameters<F>) => {
      if (!cause.reads.includes(cap)) throw readFailure('the read was refused or failed', `cause ${cause.id} does not declare that it reads ${cap}`);
      if (signal.aborted) throw readFailure('the read was refused or failed', 'the check was cut off');
      return fn(...args);
    }) as F;
  const ctx: CheckContext = {
    episode: Object.freeze({ ...inputs.episode }),
    at: inputs.at,
    moment: inputs.moment,
    ...frozenCopies(inputs),
    settings: Object.freeze({ ...cause.defaults, ...pick(inputs.overrides[cause.id] ?? {}, cause.defaults) }),
    metrics: Object.freeze({ query: guard('metrics', r.metrics.query.bind(r.metrics)), range: guard('metrics', r.metrics.range.bind(r.metrics)) }),
    changes: Object.freeze({ since: guard('changes', r.changes.since.bind(r.changes)) }),
    http: Object.freeze({ get: guard('http', r.http.get.bind(r.http)) }),
    ledger: Object.freeze({ events: guard('ledger', r.ledger.events.bind(r.ledger)) }),
    read: async (capability: ReadCapability, request: Record<string, unknown>) => {
      const cap = String(capability);
      if (!cause.reads.includes(cap))
        throw readFailure('the read was refused or failed', `cause ${cause.id} does not declare that it reads ${cap.slice(0, 40)}`);
      if (signal.aborted) throw readFailure('the read was refused or failed', 'the check was cut off');
      if (typeof request !== 'object' || request === null || Array.isArray(request))
        throw readFailure('the read was refused or failed', `a ${cap} read takes an object`);
      const given = structuredClone(request);
      const mine = cause.named[cap];
      const name = given.name;
      // A name the pack declared is resolved here, from the pack's own code: a check cannot hand the connector text of its own.
      let declared: DeclaredRead | undefined;
      if (mine !== undefined) {
        if (typeof name !== 'string' || mine[name] === undefined)
          throw readFailure('the read was refused or failed', `pack ${cause.pack} declares no ${cap} named "${String(name).slice(0, 64)}"`);
        declared = { pack: cause.pack, name, value: structuredClone(mine[name]) };
      }
      return r.read(cap, given, declared);
    },
    log: Object.freeze({ info: log.info.bind(log), warn: log.warn.bind(log), error: log.error.bind(log) }),
    lib: packLibrary,
    signal,
    deadline,
  };
  return Object.freeze(ctx);
}

/** A frozen copy of what every check of one investigation is shown, made once and shared by them (nothing can change it). */
const frozen = new WeakMap<CheckInputs, Pick<CheckContext, 'signals' | 'service' | 'related'>>();
function frozenCopies(inputs: CheckInputs): Pick<CheckContext, 'signals' | 'service' | 'related'> {
  let f = frozen.get(inputs);
  if (f === undefined)
    frozen.set(
      inputs,
      (f = {
        signals: deepFreeze(structuredClone(inputs.signals)),
        service: deepFreeze(structuredClone(inputs.service)),
        related: deepFreeze(structuredClone(inputs.related)),
      }),
    );
  return f;
}

/** Overrides of settings the cause declares, of the declared type; others are ignored. */
function pick(given: Record<string, unknown>, defaults: Record<string, number | string | boolean>): Record<string, number | string | boolean> {
  const out: Record<string, number | string | boolean> = {};
  for (const [k, v] of Object.entries(given)) if (k in defaults && typeof v === typeof defaults[k]) out[k] = v as number | string | boolean;
  return out;
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}
