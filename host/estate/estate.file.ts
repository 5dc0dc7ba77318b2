import fs from 'node:fs';
import path from 'node:path';
import { AppError } from '../errors.ts';
import { validateOverrides, type OverridesDoc } from './estate.schema.ts';

/** The file that makes the overrides file-managed: `estate.json` in SERVICE_CONFIG_DIR. */
export const ESTATE_FILE = 'estate.json';

export interface EstateFile {
  /** null: no file, the overrides are managed through the API. */
  path: string | null;
  doc: OverridesDoc | null;
  problem: string | null;
}

/** Reads `estate.json` once; a file that is not a valid overrides document is a problem, and no overrides are taken from it. */
export function readEstateFile(configDir: string | null): EstateFile {
  if (configDir === null) return { path: null, doc: null, problem: null };
  const file = path.join(configDir, ESTATE_FILE);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { path: null, doc: null, problem: null };
    return { path: file, doc: null, problem: `cannot read ${ESTATE_FILE}: ${(e as Error).message}` };
  }
  try {
    const doc = validateOverrides(JSON.parse(text));
    for (const [name, entry] of Object.entries(doc.services)) if (entry === null) delete doc.services[name];
    return { path: file, doc, problem: null };
  } catch (e) {
    return { path: file, doc: null, problem: `${ESTATE_FILE} is not a valid overrides document: ${e instanceof AppError ? e.message : (e as Error).message}` };
  }
}
