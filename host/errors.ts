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
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  internal: 500,
  // settings documents read at another version than the stored one (GET, change, PUT)
  version_conflict: 409,
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
  reserved_actor: 400,
  // licence and first owner
  bad_licence: 400,
  licence_file_managed: 409,
  trial_already_used: 409,
  no_licence: 409,
  already_bootstrapped: 409,
  // alert intake
  unreadable_alert: 400,
  // people and sign-in
  invalid_code: 401,
  invalid_credentials: 401,
  rate_limited: 429,
  // the password check's queue is full (docs/sign-in.md): answered at once, with Retry-After
  sign_in_busy: 503,
  last_owner: 409,
  person_exists: 409,
  not_allowed_by_policy: 400,
  would_lock_out_owners: 409,
  password_not_allowed: 409,
  directory_managed: 409,
  // single sign-on and the directory
  invalid_ticket: 401,
  directory_unavailable: 503,
  sso_unavailable: 503,
  directory_not_configured: 409,
  sso_not_configured: 409,
  sync_running: 409,
  // a stored secret would go to another address than it was entered for (connectors, mail, single sign-on)
  secret_required: 400,
  console_address_managed: 409,
  console_address_required: 409,
  sender_not_verified: 400,
  mail_failed: 502,
  mail_settings_conflict: 409,
  // episodes
  bad_query: 400,
  bad_cursor: 400,
  // policy
  policy_file_managed: 409,
  policy_version_conflict: 409,
  // connectors
  connector_file_managed: 409,
  unknown_kind: 400,
  invalid_settings: 400,
  invalid_connector_name: 400,
  query_not_supported: 400,
  // governance: autonomy, approvals, the halt switch and the action gate
  unknown_service: 404,
  level_not_allowed: 400,
  by_required: 400,
  own_request: 403,
  not_an_approver: 403,
  not_reversible: 409,
  action_failed: 502,
  already_decided: 409,
  approval_closed: 409,
  halted: 409,
  action_not_approved: 409,
  frozen: 409,
  autonomy_too_low: 409,
  action_cap_reached: 409,
  autonomy_file_managed: 409,
  // discovery
  discovery_running: 409,
  // study
  study_running: 409,
  study_not_running: 409,
  // estate
  licence_limit: 409,
  estate_file_managed: 409,
  suggestion_decided: 409,
  // a change waiting for two approvals (a tier lowered, approvers of a tier-1/2 service changed)
  estate_change_pending: 409,
  estate_change_stale: 409,
  // keychain
  licence_tier: 403,
  keychain_exists: 409,
  keychain_none: 409,
  keychain_not_home: 409,
  keychain_not_member: 403,
  keychain_name_taken: 409,
  keychain_already_member: 409,
  keychain_mismatch: 409,
  keychain_bad_signature: 403,
  keychain_replay: 403,
  keychain_clock_skew: 403,
  keychain_home_unreachable: 502,
  keychain_bad_answer: 502,
  home_not_lost: 409,
  keychain_home_alive: 409,
  site_key_invalid: 403,
  site_key_used: 403,
  site_key_expired: 403,
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
