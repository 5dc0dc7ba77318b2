import { Ajv, type ErrorObject, type JSONSchemaType, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { AppError } from './errors.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** One ajv instance for every JSON Schema check (request bodies, documents, alerts): strict
 * schemas, no type coercion, all errors collected. Neutral: no HTTP here. */
export const ajv = addFormats(new Ajv({ allErrors: true, strict: true, coerceTypes: false, useDefaults: false }));

/** Compiles `schema` once; the returned function throws 400 `invalid_body` naming the first bad field. */
export function schemaValidator<T>(schema: JSONSchemaType<T> | Record<string, unknown>): (value: unknown) => T {
  const check = ajv.compile(schema) as ValidateFunction<T>;
  return (value: unknown): T => {
    if (check(value)) return value;
    throw new AppError('invalid_body', describe(check.errors ?? []));
  };
}

export function describe(errors: ErrorObject[]): string {
  const e = errors[0];
  if (e === undefined) return 'body is not valid';
  const where = e.instancePath === '' ? 'body' : e.instancePath.slice(1).replaceAll('/', '.');
  if (e.keyword === 'additionalProperties') return `${where}: unknown field ${String((e.params as { additionalProperty: string }).additionalProperty)}`;
  if (e.keyword === 'required') return `${where}: ${String((e.params as { missingProperty: string }).missingProperty)} is required`;
  return `${where} ${e.message ?? 'is not valid'}`;
}
