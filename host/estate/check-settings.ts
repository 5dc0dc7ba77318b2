import type { OverridesDoc } from './estate.schema.ts';

/** A cause's declared settings and their defaults (whose types the overrides must keep), or null when no loaded pack declares it. */
export type CauseSettingsLookup = (cause: string) => Readonly<Record<string, number | string | boolean>> | null;

/**
 * What is wrong with the services' `check_settings`, checked against what each cause declares:
 * a cause no loaded pack declares, a setting the cause does not have, a value of another type
 * than its default. Null when every setting is one the cause reads. (Without this check such
 * settings were taken silently and ignored: a threshold mistyped is a threshold not in force.)
 */
export function checkSettingsProblem(doc: OverridesDoc, lookup: CauseSettingsLookup): string | null {
  for (const [name, entry] of Object.entries(doc.services)) {
    for (const [cause, given] of Object.entries(entry?.check_settings ?? {})) {
      const where = `services.${name}.check_settings.${cause}`;
      const declared = lookup(cause);
      if (declared === null) return `${where}: no loaded pack declares the cause ${cause}`;
      for (const [key, value] of Object.entries(given)) {
        if (!(key in declared)) {
          const known = Object.keys(declared);
          return `${where}.${key}: ${cause} has no setting ${key} (${known.length === 0 ? 'it has no settings' : `its settings: ${known.join(', ')}`})`;
        }
        const want = typeof declared[key];
        if (typeof value !== want) return `${where}.${key}: must be a ${want} like its default ${JSON.stringify(declared[key])}, not ${JSON.stringify(value)}`;
      }
    }
  }
  return null;
}
