import { schemaValidator } from '../json-schema.ts';

/** Compiles `schema` once; the returned function throws 400 `invalid_body` naming the first bad field. */
export const bodyValidator = schemaValidator;
