/**
 * `autonomy.json` in SERVICE_CONFIG_DIR: the change-managed file that grants services their
 * autonomy level, and the only way a service reaches L2. This file reads and checks it; what the
 * host does with it is in autonomy-file.service.ts.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ValidateFunction } from 'ajv';
import { ajv, describe } from '../json-schema.ts';
import { SERVICE_PATTERN } from '../policy/policy.schema.ts';
import { clip } from '../text.ts';
import { LEVELS, type Level } from './levels.ts';

/** The file that grants autonomy levels. JSON only, like policy.json (no YAML twin). */
export const AUTONOMY_FILE = 'autonomy.json';
/** As many services as the policy may set ceilings for. */
export const MAX_FILE_SERVICES = 500;
/** A file larger than this is refused unread: it cannot be a list of 500 short names. */
export const MAX_FILE_BYTES = 256 * 1024;

/** The document: `{"services": {"payments": "L2", "search": "L1"}}`. */
export interface AutonomyFileDoc {
  services: Record<string, Level>;
}

/** The JSON Schema (draft-07) the file is checked against with ajv. */
export const AUTONOMY_FILE_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'autonomy.json',
  type: 'object',
  additionalProperties: false,
  required: ['services'],
  properties: {
    services: {
      description: "per service, the autonomy level the file grants; a listed service's level cannot be changed over the API",
      type: 'object',
      maxProperties: MAX_FILE_SERVICES,
      propertyNames: { type: 'string', pattern: SERVICE_PATTERN },
      additionalProperties: { type: 'string', enum: [...LEVELS] },
    },
  },
} as const;

const check = ajv.compile(AUTONOMY_FILE_SCHEMA) as ValidateFunction<AutonomyFileDoc>;

/** What one read of the file found. `sha256` is of the file's bytes, as read. */
export type AutonomyFileRead =
  { state: 'absent' } | { state: 'bad'; sha256: string | null; problem: string } | { state: 'good'; sha256: string; services: ReadonlyMap<string, Level> };

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** Why a document is not a valid autonomy file, naming the first bad field; null when it is. */
export function autonomyFileProblem(doc: unknown): string | null {
  if (check(doc)) return null;
  const e = check.errors?.[0];
  const name = e?.propertyName ?? (e?.params as { propertyName?: string } | undefined)?.propertyName;
  if (e !== undefined && name !== undefined) return `services: ${JSON.stringify(name)} is not a valid service name`;
  if (e !== undefined && e.keyword === 'enum') {
    return `${e.instancePath.slice(1).replaceAll('/', '.')} must be one of: ${LEVELS.join(', ')}`;
  }
  return describe(check.errors ?? []);
}

/**
 * Reads and checks the file at `file`. A missing file is `absent`; a file that cannot be read,
 * is not JSON or is not a valid document is `bad` with the reason.
 */
export function readAutonomyFile(file: string): AutonomyFileRead {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { state: 'absent' };
    return { state: 'bad', sha256: null, problem: `${AUTONOMY_FILE} could not be read (${code ?? 'error'})` };
  }
  const digest = sha256(bytes);
  if (bytes.length > MAX_FILE_BYTES) return { state: 'bad', sha256: digest, problem: `${AUTONOMY_FILE} is larger than ${MAX_FILE_BYTES} bytes` };
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch (e) {
    return { state: 'bad', sha256: digest, problem: `${AUTONOMY_FILE} is not valid JSON: ${clip((e as Error).message, 300, '…')}` };
  }
  const problem = autonomyFileProblem(doc);
  if (problem !== null) return { state: 'bad', sha256: digest, problem: `${AUTONOMY_FILE} is not valid: ${clip(problem, 300, '…')}` };
  const services = new Map(Object.entries((doc as AutonomyFileDoc).services).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return { state: 'good', sha256: digest, services };
}
