import { schemaValidator } from '../json-schema.ts';
import type { RecordEvent } from '../ledger/ledger.service.ts';
import type { Trx } from '../storage/db.ts';
import type { OverrideRow } from './estate.repo.ts';
import type { OverrideEntry } from './estate.schema.ts';
import type { EstateService } from './estate.service.ts';

type CheckSettings = NonNullable<OverrideEntry['check_settings']>;

const servicesOf = schemaValidator<{ services: Record<string, unknown> }>({
  type: 'object',
  additionalProperties: false,
  required: ['services'],
  properties: { services: { type: 'object', maxProperties: 10_000 } },
});

/** The entry without the packs' settings (those are the `packs_settings` part). */
function withoutChecks(entry: OverrideEntry): OverrideEntry {
  const { check_settings: _checks, ...rest } = entry;
  return rest;
}

function withChecks(entry: OverrideEntry, checks: CheckSettings | undefined): OverrideEntry {
  const out = withoutChecks(entry);
  return checks === undefined || Object.keys(checks).length === 0 ? out : { ...out, check_settings: checks };
}

/**
 * The estate's two parts of the keychain (docs/keychain.md):
 * - `estate_overrides`: the services people added and what they set (owner, team, tier,
 *   approvers, links, dependencies...), without the packs' settings. Applied, this install's
 *   overrides become the carried ones; each service keeps its own `check_settings` unless the
 *   packs' settings are carried too.
 * - `packs_settings`: each added service's `check_settings` (the causes' thresholds). Applied, to
 *   the services this install has; a service it does not have is left out (named in the event).
 * Both go through the checks of PUT /v1/estate/overrides, and each change is an
 * `estate.overrides_changed` event `via: "keychain"`.
 */
export class CarriedEstate {
  readonly #estate: EstateService;

  constructor(estate: EstateService) {
    this.#estate = estate;
  }

  readonly overrides = {
    export: async (trx?: Trx): Promise<{ services: Record<string, OverrideEntry> }> => {
      const rows = await this.#estate.overrideRows(trx);
      return { services: Object.fromEntries(rows.map((r) => [r.name, withoutChecks(r.entry)])) };
    },
    apply: async (trx: Trx, record: RecordEvent, data: unknown, actor: string): Promise<Record<string, unknown>> => {
      const carried = servicesOf(data).services as Record<string, OverrideEntry>;
      const build = (before: OverrideRow[]) => {
        const mine = new Map(before.map((r) => [r.name, r.entry.check_settings]));
        const wanted: Record<string, OverrideEntry | null> = {};
        for (const r of before) if (!(r.name in carried)) wanted[r.name] = null;
        for (const [name, entry] of Object.entries(carried)) wanted[name] = withChecks(entry, mine.get(name));
        return wanted;
      };
      return this.#estate.replaceCarried(trx, record, build, actor, 'estate overrides carried by the keychain');
    },
  };

  readonly packs = {
    export: async (trx?: Trx): Promise<{ services: Record<string, CheckSettings> }> => {
      const rows = await this.#estate.overrideRows(trx);
      return { services: Object.fromEntries(rows.map((r) => [r.name, r.entry.check_settings ?? {}])) };
    },
    apply: async (trx: Trx, record: RecordEvent, data: unknown, actor: string): Promise<Record<string, unknown>> => {
      const carried = servicesOf(data).services as Record<string, CheckSettings>;
      let missing: string[] = [];
      const build = (before: OverrideRow[]) => {
        const have = new Set(before.map((r) => r.name));
        missing = Object.keys(carried).filter((n) => !have.has(n));
        const wanted: Record<string, OverrideEntry | null> = {};
        for (const r of before) if (r.name in carried) wanted[r.name] = withChecks(r.entry, carried[r.name]);
        return wanted;
      };
      const changed = await this.#estate.replaceCarried(trx, record, build, actor, 'packs settings carried by the keychain');
      return { ...changed, not_here: missing };
    },
  };
}
