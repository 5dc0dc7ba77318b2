/**
 * Every error code the API answers with, grouped by area, with its HTTP status. Domain code
 * throws AppError with a code from here; one handler (http/respond.ts) turns it into
 * `{"error": code, "message"?}` with this status.
 */
export const ERROR_STATUS = {
  // request shape
  invalid_json: 400,
  invalid_body: 400,
  invalid_parameter: 400,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  internal: 500,
  // tokens and modes
  unauthorized: 401,
  forbidden: 403,
  ingest_disabled: 403,
  use_email: 403,
  not_operating: 503,
  // storage and ledger
  storage_unavailable: 503,
  ledger_unavailable: 503,
  invalid_event_type: 400,
  // licence and first owner
  bad_licence: 400,
  licence_file_managed: 409,
  trial_already_used: 409,
  no_licence: 409,
  already_bootstrapped: 409,
  // alert intake
  unreadable_alert: 400,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class AppError extends Error {
  readonly status: number;
  /** Restify reads the status of errors that reach it from middleware under this name. */
  readonly statusCode: number;
  readonly code: ErrorCode;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message?: string, headers: Record<string, string> = {}) {
    super(message ?? code);
    this.code = code;
    this.headers = headers;
    this.status = ERROR_STATUS[code];
    this.statusCode = this.status;
  }
  /** The answer body: the code, and the message only when one was given on purpose. */
  toBody(): { error: string; message?: string } {
    return this.message === this.code ? { error: this.code } : { error: this.code, message: this.message };
  }
}
