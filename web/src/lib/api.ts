/**
 * The console's one way to the HTTP API: every page goes through `api`. The session token lives
 * in sessionStorage (per tab, gone when the tab closes) and nowhere else; everything else the
 * console shows is read from the API when shown.
 *
 * Over 300 lines and one concept: the console's side of the API contract (docs/api.md). It is
 * the one `call` with its error and session handling, the `api` / `settingsApi` methods, and
 * the answer types those methods return, grouped by the areas of docs/api.md; the small rules
 * that read those answers (`canChange`, `mayDecide`, `needsBy`) sit beside the types they read.
 * Splitting the types from their methods would leave either half meaningless alone. Watching the
 * ledger head for live pages is a separate concern: `live.ts`.
 */

const TOKEN_KEY = 'oncall.session';

/** An answer from the API that was not a success: `{error, message?}` with its status. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  /** Seconds, from `Retry-After` on 429. */
  readonly retryAfter: number | null;

  constructor(status: number, code: string, message: string | undefined, retryAfter: number | null) {
    super(message ?? code);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

export const session = {
  token(): string | null {
    try {
      return sessionStorage.getItem(TOKEN_KEY);
    } catch {
      return null;
    }
  },
  set(token: string): void {
    sessionStorage.setItem(TOKEN_KEY, token);
  },
  clear(): void {
    sessionStorage.removeItem(TOKEN_KEY);
  },
};

/** Called when the session's token is refused (401): the app sends the person to sign-in. */
let onSignedOut: (reason: string) => void = () => {};
export function whenSignedOut(fn: (reason: string) => void): void {
  onSignedOut = fn;
}

type Auth = 'session' | 'none' | { bearer: string };

async function call<T>(method: string, path: string, body?: unknown, auth: Auth = 'session'): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  const bearer = auth === 'session' ? session.token() : auth === 'none' ? null : auth.bearer;
  if (bearer !== null) headers.Authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit' });
  } catch {
    throw new ApiError(0, 'unreachable', 'The service cannot be reached. Is it running?', null);
  }
  const text = await res.text();
  let data: unknown = null;
  if (text !== '') {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (res.ok) return data as T;
  const err = (data ?? {}) as { error?: unknown; message?: unknown };
  const code = typeof err.error === 'string' ? err.error : `http_${res.status}`;
  const message = typeof err.message === 'string' ? err.message : undefined;
  const retry = Number(res.headers.get('Retry-After'));
  const failure = new ApiError(res.status, code, message ?? describe(code), Number.isFinite(retry) && retry > 0 ? retry : null);
  if (res.status === 401 && auth === 'session' && bearer !== null) {
    session.clear();
    onSignedOut(message ?? 'Your session has ended. Please sign in again.');
  }
  throw failure;
}

/** Plain words for the error codes a person meets on these pages. */
export function describe(code: string): string {
  const words: Record<string, string> = {
    unauthorized: 'That token or session is not valid.',
    invalid_code: 'That code is wrong or has expired.',
    invalid_credentials: 'That e-mail and password do not match, or the address is locked for a while.',
    rate_limited: 'Too many tries. Wait a little and try again.',
    use_email: 'E-mail works on this install: sign in with an e-mailed code.',
    already_bootstrapped: 'The first owner already exists: sign in instead.',
    no_licence: 'Install a licence or start the trial first.',
    trial_already_used: 'The trial has already been used on this install.',
    bad_licence: 'That licence is not valid for this install.',
    licence_file_managed: 'The licence is managed by a file on the server.',
    not_allowed_by_policy: 'The access policy does not admit that address.',
    sender_not_verified: 'The mail provider has not verified that sender address.',
    invalid_body: 'Some of what was entered is not valid.',
    storage_unavailable: 'The service cannot reach its database right now.',
    internal: 'The service failed to answer. Try again.',
    invalid_ticket: 'The single sign-on did not finish in time or was used already: sign in again.',
    directory_unavailable: 'The directory cannot be reached right now: try again later.',
    sso_unavailable: 'The identity provider cannot be reached right now: try again later.',
    directory_not_configured: 'No directory is configured.',
    sso_not_configured: 'Single sign-on is not configured.',
    sync_running: 'A sync is running already: its result shows here when it ends.',
    secret_required: 'Give the password or secret again: the address or account changed.',
    console_address_managed: 'SERVICE_PUBLIC_URL sets the console address on the server.',
    console_address_required: 'Single sign-on needs the console address.',
    would_lock_out_owners: 'That would shut out every owner.',
    licence_tier: 'The keychain needs an Enterprise or Strategic licence.',
    site_key_invalid: 'That site key is not one of that home: copy it whole from the home.',
    site_key_used: 'That site key was used already: create another on the home.',
    site_key_expired: 'That site key is older than 10 minutes: create another on the home.',
    home_not_lost: 'The home was reached less than 15 minutes ago: a take-over is not allowed yet.',
    keychain_home_unreachable: 'The home cannot be reached.',
  };
  return words[code] ?? `The service answered: ${code}.`;
}

// The shapes the console reads (docs/api.md, docs/sign-in.md).

export type Mode = 'setup' | 'configuring' | 'operating';
export interface SetupStep {
  step: 'licence' | 'owner';
  done: boolean;
  label: string;
}
export interface Status {
  version: string;
  fingerprint: string;
  mode: Mode;
  licence: { state: string; customer: string | null; expires_at: string | null; in_grace: boolean };
  setup: { steps: SetupStep[]; done: number; total: number; next: SetupStep['step'] | null };
  auth: {
    /** Single sign-on and directory sign-in (docs/sign-in.md): which are on, the button's label, whether codes and passwords work. */
    sso: { mode: 'off' | 'oidc' | 'ldap' | 'both'; label: string | null; local: boolean };
    break_glass: { open: boolean; reason: string | null };
    /** Whether e-mailed sign-in codes can be sent (docs/sign-in.md). */
    email_codes: EmailCodes;
  };
}
export type EmailCodes = 'off' | 'untested' | 'working' | 'failing';
export interface User {
  email: string;
  name: string;
  role: string;
}
export interface Me {
  user: User | null;
  actor: string;
  role: string;
  via: 'session' | 'break_glass' | 'admin_token';
}
export type LoginAnswer = { bootstrap: true } | { break_glass: true; token: string };
/** POST /v1/auth/bootstrap: the first owner and, optionally, mail for sign-in codes. */
export interface BootstrapBody {
  email: string;
  name: string;
  provider?: 'smtp' | 'api';
  mail_from?: string;
  resend_key?: string;
  smtp_host?: string;
  smtp_port?: number;
  smtp_user?: string;
  smtp_password?: string;
  smtp_security?: 'starttls' | 'ssl' | 'none';
  /** The console's address as people reach it (links in messages, the single sign-on callback). */
  console_address?: string;
}
export interface SessionAnswer {
  token: string;
  user?: User;
}

export const api = {
  status: () => call<Status>('GET', '/v1/status', undefined, 'none'),
  me: () => call<Me>('GET', '/v1/auth/me'),
  logout: () => call<{ signed_out: true }>('POST', '/v1/auth/logout'),

  /** The admin token at the door: bootstrap on a new install, break-glass while mail cannot send. */
  login: (adminToken: string) => call<LoginAnswer>('POST', '/v1/login', { token: adminToken }, 'none'),
  requestCode: (email: string) => call<{ sent: true }>('POST', '/v1/auth/request', { email }, 'none'),
  verifyCode: (email: string, code: string) => call<SessionAnswer>('POST', '/v1/auth/verify', { email, code }, 'none'),
  password: (email: string, password: string) => call<SessionAnswer>('POST', '/v1/auth/password', { email, password }, 'none'),
  /** A directory password (LDAP / Active Directory): `name`, `name@domain` or `DOMAIN\\name`. */
  directory: (username: string, password: string) => call<SessionAnswer>('POST', '/v1/auth/ldap', { username, password }, 'none'),
  /** The ticket single sign-on ended with (`/?sso=<ticket>`): the session, once, within 60 s. */
  redeemSso: (ticket: string) => call<SessionAnswer & { return_to: string }>('POST', '/v1/auth/sso/redeem', { ticket }, 'none'),

  // Setup: called with the admin token, which the console holds in memory only.
  startTrial: (adminToken: string) => call<{ licence: unknown }>('POST', '/v1/licence/redeem', {}, { bearer: adminToken }),
  installLicence: (adminToken: string, licence: unknown) => call<{ licence: unknown }>('POST', '/v1/licence', { licence }, { bearer: adminToken }),
  bootstrap: (adminToken: string, owner: BootstrapBody) => call<{ user: User }>('POST', '/v1/auth/bootstrap', owner, { bearer: adminToken }),

  // Episodes (docs/episodes.md): a bad query is 400 `bad_query`, its message ending "at column N".
  episodes: (opts: { query?: string; group?: 'incident' | null; cursor?: string | null; limit?: number } = {}) =>
    call<EpisodePage>('GET', `/v1/episodes${params({ query: opts.query?.trim() || null, group: opts.group, cursor: opts.cursor, limit: opts.limit })}`),
  episode: (id: string) => call<EpisodeDetail>('GET', `/v1/episodes/${encodeURIComponent(id)}`),

  // Governance (docs/governance.md). `by` is needed only when no person is signed in (admin token, break-glass).
  autonomy: () => call<AutonomyOverview>('GET', '/v1/autonomy'),
  setAutonomy: (service: string, level: SettableLevel, by?: string) => call<AutonomyChange>('POST', '/v1/autonomy', { service, level, ...(by ? { by } : {}) }),
  approvals: (opts: { state?: ApprovalState; limit?: number } = {}) =>
    call<{ approvals: Approval[] }>('GET', `/v1/approvals${params({ state: opts.state, limit: opts.limit })}`),
  decide: (id: string, decision: 'approve' | 'reject', note?: string) =>
    call<{ approval: Approval }>('POST', `/v1/approvals/${encodeURIComponent(id)}/${decision}`, note ? { note } : {}),
  /** Reverses the `n`-th (1-based) executed action of an episode through the action gate (admin). */
  undoAction: (episode: string, n: number) => call<{ action: TakenAction }>('POST', `/v1/episodes/${encodeURIComponent(episode)}/actions/${n}/undo`, {}),
  halt: (reason: string, by?: string) => call<HaltAnswer>('POST', '/v1/halt', { reason, ...(by ? { by } : {}) }),
  resume: (by?: string) => call<HaltAnswer>('POST', '/v1/resume', by ? { by } : {}),

  // The ledger (docs/ledger.md): newest first; `type` and `actor` are prefixes.
  ledger: (f: LedgerFilter = {}) =>
    call<{ events: LedgerEvent[]; more: boolean }>(
      'GET',
      `/v1/ledger${params({ type: f.type, actor: f.actor, q: f.q, trace: f.trace, before_seq: f.before_seq, after_seq: f.after_seq, limit: f.limit, order: f.order })}`,
    ),
  verifyLedger: () => call<VerifyReport>('GET', '/v1/ledger/verify'),

  // The digest (docs/digest.md): the last `days` (1 to 90) as data and as Markdown.
  digest: (days: number) => call<Digest>('GET', `/v1/digest${params({ days })}`),
  /** The head of the ledger from the status: it moves with every recorded event. */
  ledgerHead: () => call<{ ledger_head: { seq: number; hash: string } }>('GET', '/v1/status', undefined, 'none').then((s) => s.ledger_head),
};

/**
 * After asking for a code: whether the service could send it. The send happens after the
 * answer (which is the same whoever asks), so the status is read a few times until the
 * outcome of that send shows (`working` or `failing`), for at most about 5 s.
 */
export async function codeOutcome(before: EmailCodes, tries = 10): Promise<{ codes: EmailCodes; reason: string | null }> {
  let last: Status | null = null;
  for (let i = 0; i < tries; i++) {
    await new Promise((r) => setTimeout(r, 500));
    try {
      last = await api.status();
    } catch {
      continue;
    }
    const codes = last.auth.email_codes;
    if (codes === 'failing' || (codes === 'working' && before !== 'working')) break;
  }
  return { codes: last?.auth.email_codes ?? before, reason: last?.auth.break_glass.reason ?? null };
}

/** `?a=1&b=x` of the values given; empty strings, null and undefined are left out. */
function params(values: Record<string, string | number | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const text = q.toString();
  return text === '' ? '' : `?${text}`;
}

// Episodes, governance and the ledger (docs/episodes.md, docs/governance.md, docs/ledger.md).

export interface EpisodeSummary {
  id: string;
  /** The worst severity of its alerts (critical, warning, info); null without alerts. */
  severity: string | null;
  /** `storm`: the alerts a source sent beyond its limits, held in one episode (docs/episodes.md#storms). */
  kind: 'incident' | 'notice' | 'storm';
  state: 'open' | 'closed';
  service: string;
  alerts: string[];
  /** A storm's source and how many alerts and services it holds (the services holding most, on the episode); null for others. */
  storm?: { source: string; alerts: number; services: number; held?: Array<{ service: string; alerts: number }> } | null;
  t_open: string;
  t_close: string | null;
  duration_s: number;
  decision: string;
  outcome: string;
  result: string;
  note: string | null;
  /** How the outcome came about: who was told and how, or why nobody was (docs/notifications.md). */
  outcome_detail?: { value: string | null; reason: string; at: string; told: string[]; channels: Array<{ to: string; how: string }> } | null;
}
export interface EpisodePage {
  episodes: EpisodeSummary[];
  more: boolean;
  cursor: string | null;
}
export interface Baseline {
  first_seen: string;
  last_seen: string;
  firings_7d: number;
  firings_30d: number;
  flapping: boolean;
}
export interface Signal {
  fingerprint: string;
  name: string;
  severity: string;
  source: string;
  summary: string;
  joined_at: string;
  ended_at: string | null;
  status: 'firing' | 'resolved' | 'released';
  baseline: Baseline;
}
/** The investigation of an episode (docs/investigation.md): `skipped` says why in `note`. */
export interface Investigation {
  state: 'pending' | 'running' | 'diagnosed' | 'skipped';
  run: number;
  started_at: string | null;
  finished_at: string | null;
  note: string | null;
}
/** One cause checked: `obstacle` is set for `unknown` only; `evidence` holds evidence ids. */
export interface Verdict {
  cause: string;
  title: string;
  verdict: 'holds' | 'ruled_out' | 'unknown';
  reason: string;
  obstacle: string | null;
  evidence: string[];
  took_ms: number;
  remedy: unknown;
  verification: unknown;
}
/** What a check read: the exact query, where and when, so a person can run it again. */
export interface Evidence {
  id: string;
  cause: string;
  source: string;
  kind: string;
  query: string;
  at: string;
  observed: unknown;
  excerpt: string;
  /** Which moment it was read at: the run's (`opening`, `newest_signal`, `asked`, `now`), `now` for a read of the present, `stated` for a moment the check named. */
  moment?: 'opening' | 'newest_signal' | 'asked' | 'now' | 'stated';
}
/** What holds (ranked, best first), what could not be checked, and the sentences read first. */
export interface Diagnosis {
  holds: string[];
  unknown: string[];
  summary: string;
  /** The moment the run read, and what it is (absent in older diagnoses). */
  at?: string;
  moment?: 'opening' | 'newest_signal' | 'asked' | 'now';
}
export interface EpisodeDetail extends EpisodeSummary {
  signals: Signal[];
  data: Record<string, string[]>;
  /** Null for an episode older than investigations. */
  investigation: Investigation | null;
  verdicts: Verdict[];
  evidence: Evidence[];
  diagnosis: Diagnosis | null;
  /** The action path (docs/acting.md): each step null (or empty) until reached; `path_state` null when there is no path. */
  proposal: Proposal | null;
  /** Acting's decision (`checks`, `level`, `approval`), or, without a path, the episode's (`outcome`). */
  policy_decision: PolicyDecision | null;
  rehearsal: Rehearsal | null;
  /** The action request as last seen by the path (at most one today). */
  approvals: ActionRequestSeen[];
  /** The actions taken (at most one today); an action's position, from 1, is the `n` of its undo. */
  actions: TakenAction[];
  path_state: PathState | null;
  verification: Verification | null;
  timeline: LedgerEvent[];
  timeline_more: boolean;
}

/** What the path proposes: the remedy of the best cause that holds, with the connector to perform it. */
export interface Proposal {
  action: string;
  connector: string;
  params: Record<string, unknown>;
  why: string;
  undo: string;
  verify: { cause: string; expect: 'ruled_out' | 'holds'; after_s: number };
  cause: string;
  rehearsable: boolean;
  reversible: boolean;
}
export interface PolicyCheck {
  name: string;
  passed: boolean;
  detail: string;
}
export interface PolicyDecision {
  decision: string;
  reason: string | null;
  /** Acting's decision only. */
  level?: Level;
  approval?: boolean;
  checks?: PolicyCheck[];
  /** The episode's own decision only (no action path). */
  outcome?: string;
}
export type Rehearsal = { ok: true; shown: string; at: string } | { ok: false; problem: string };
export interface ActionRequestSeen {
  id: string;
  state: ApprovalState;
  approvers: string[];
  needed: number;
  expires_at: string;
  decisions: { by: string; decision: 'approve' | 'reject'; note: string | null; at: string }[];
}
/** An action: only `connector`, `kind`, `params` while it is being taken; the result once recorded. */
export interface TakenAction {
  connector: string;
  kind: string;
  params: Record<string, unknown>;
  approval_id?: string | null;
  executed_at?: string;
  ok?: boolean;
  shown?: string;
  problem?: string | null;
  reversible: boolean;
  undone_at?: string | null;
  undone_by?: string;
}
export type PathState = 'pending' | 'awaiting_approval' | 'executing' | 'verifying' | 'done';
export interface Verification {
  at: string;
  cause: string;
  expected: string;
  /** `check`: the cause re-checked decides; `alerts`: nothing can re-check it, every alert must clear after the action. */
  by?: 'check' | 'alerts';
  verdict: string | null;
  reason: string | null;
  alerts_resolved: boolean;
  mitigated: boolean;
}

export type Level = 'off' | 'shadow' | 'L1' | 'L2';
export type SettableLevel = 'off' | 'shadow' | 'L1';
export interface Halt {
  by: string;
  reason: string;
  at: string;
}
export interface PendingRaise {
  id: string;
  level: Level;
  requested_by: string;
  at: string;
}
export interface ServiceAutonomy {
  service: string;
  level: Level;
  /** `file`: set by autonomy.json on the host, which the API cannot change. */
  source: 'file' | 'api' | 'default';
  readiness: string[];
  pending: PendingRaise | null;
}
export interface AutonomyOverview {
  halted: boolean;
  halt: Halt | null;
  services: ServiceAutonomy[];
}
export interface AutonomyChange {
  service: string;
  level: Level;
  changed: boolean;
  pending: PendingRaise | null;
}
export interface HaltAnswer {
  halted: boolean;
  halt: Halt | null;
  changed: boolean;
}
export type ApprovalState = 'pending' | 'approved' | 'rejected' | 'expired' | 'superseded';
export interface Approval {
  id: string;
  kind: 'autonomy_raise' | 'action' | 'estate_change';
  state: ApprovalState;
  service: string;
  from: Level | null;
  to: Level | null;
  action: string | null;
  summary: string;
  requested_by: string;
  /** Who made the request as authenticated (an e-mail, or `admin-token`): may not decide it. */
  requested_actor: string;
  requested_at: string;
  expires_at: string;
  closed_at: string | null;
  approvals_needed: number;
  /** Who may decide it, whatever their role (an action's approvers from the estate); null: any admin or owner. */
  approvers: string[] | null;
  /** The episode an action request is for; null for a raise. */
  episode: string | null;
  decisions: { by: string; decision: 'approve' | 'reject'; note: string | null; at: string }[];
}

export interface LedgerEvent {
  seq: number;
  at: string;
  type: string;
  actor: string;
  reason: string;
  data: Record<string, unknown>;
  trace: string | null;
  prev_hash: string;
  hash: string;
}
/** GET /v1/digest: the figures the page shows besides the Markdown (docs/digest.md has them all). */
export interface Digest {
  days: number;
  from: string;
  to: string;
  episodes: { opened: number; closed: number };
  ledger: { ok: boolean; head: { seq: number; hash: string }; verified_at: string; problem: string | null };
  markdown: string;
}
export interface LedgerFilter {
  type?: string;
  actor?: string;
  q?: string;
  trace?: string;
  before_seq?: number;
  after_seq?: number;
  limit?: number;
  order?: 'asc' | 'desc';
}
export interface VerifyReport {
  ok: boolean;
  checked: number;
  first_bad_seq: number | null;
  head: { seq: number; hash: string };
  checkpoint: { seq: number; hash: string; at: string } | null;
  problem: string | null;
}

/** Roles that may change things (docs/api.md): a viewer is not offered what it may not do. */
export const canChange = (me: Me | null): boolean => me !== null && (me.role === 'admin' || me.role === 'owner');
/**
 * Whether `me` may approve or reject a request (docs/governance.md, docs/acting.md): for a
 * request that names its approvers (an action), a signed-in person among them, whatever their
 * role; otherwise an admin or owner. Never the person named as asking nor the caller who asked,
 * nor someone who has decided it already. The server refuses the others anyway
 * (`not_an_approver`, `own_request`, `already_decided`).
 */
export function mayDecide(
  me: Me | null,
  a: Pick<Approval, 'approvers' | 'requested_by' | 'requested_actor' | 'decisions'>,
): 'yes' | 'viewer' | 'not_approver' | 'own' | 'decided' {
  if (a.approvers !== null) {
    if (me === null || me.user === null || me.via !== 'session') return 'not_approver';
    if (!a.approvers.some((x) => x.trim().toLowerCase() === me.actor.trim().toLowerCase())) return 'not_approver';
  } else if (!canChange(me)) return 'viewer';
  const who = me!.actor.trim().toLowerCase();
  if (who === a.requested_by.trim().toLowerCase() || who === a.requested_actor.trim().toLowerCase()) return 'own';
  if (a.decisions.some((d) => d.by.trim().toLowerCase() === who)) return 'decided';
  return 'yes';
}
/** With the admin token or break-glass no person is signed in, so changes must name one (`by`). */
export const needsBy = (me: Me | null): boolean => me !== null && me.via !== 'session';

// Settings (docs/connectors.md, docs/policy.md, docs/sign-in.md, docs/access-policy.md, docs/mail.md).

/** A JSON Schema object as a plugin or the policy publishes it; read by `SchemaForm.svelte`. */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  description?: string;
  writeOnly?: boolean;
  [key: string]: unknown;
}
export interface ConnectorKind {
  kind: string;
  version: string;
  description: string;
  settings: JsonSchema;
  secrets: string[];
  capabilities: string[];
}
export interface Connector {
  name: string;
  kind: string;
  source: 'console' | 'file';
  version: string | null;
  /** Secret fields are `{set: boolean}`, never their value. */
  settings: Record<string, unknown>;
  state: 'unchecked' | 'ok' | 'problem';
  last_problem: string | null;
  last_checked_at: string | null;
  found: Record<string, unknown> | null;
  updated_at: string | null;
  updated_by: string | null;
}
export interface ConnectorList {
  connectors: Connector[];
  file: { path: string; problem: string | null } | null;
}
export interface TestReport {
  ok: boolean;
  problem: string | null;
  kind: string;
  version: string;
  found: Record<string, unknown> | null;
  took_ms: number;
  timeout_s: number;
  checked_at: string;
}

export type AutonomyLevel = 'off' | 'shadow' | 'L1' | 'L2';
export interface FreezeWindow {
  name: string;
  start: string;
  end: string;
}
export interface PolicyDocument {
  default_autonomy: 'off' | 'shadow';
  ceilings: Record<string, AutonomyLevel>;
  safe_for_l2: string[];
  always_approve: string[];
  freeze_windows: FreezeWindow[];
  max_actions_per_service_per_hour: number;
}
export interface Policy extends PolicyDocument {
  version: number;
  source: 'default' | 'console' | 'file';
  updated_at: string | null;
  updated_by: string | null;
  problem?: string;
}

export type Role = 'owner' | 'admin' | 'viewer';
export interface Person {
  email: string;
  name: string;
  role: Role;
  teams: string[];
  tags: string[];
  enabled: boolean;
  directory: boolean;
  /** Suspended by the directory (in no mapped group) or by the identity provider; null otherwise. */
  suspended: 'directory' | 'provider' | null;
  password_set: boolean;
  password_expires_at: string | null;
  created_at: string;
  updated_at: string;
}
export type PasswordEnd = '7d' | '30d' | '90d' | 'none';
export interface PersonPatch {
  name?: string;
  role?: Role;
  teams?: string[];
  tags?: string[];
  enabled?: boolean;
}

export interface AccessPolicy {
  allowed_domains: string[];
  blocked: string[];
  block_webmail: boolean;
}
export interface MailView {
  provider: 'api' | 'smtp' | null;
  mail_from: string | null;
  resend_key_set: boolean;
  smtp_host: string | null;
  smtp_port: number;
  smtp_user: string | null;
  smtp_password_set: boolean;
  smtp_security: 'starttls' | 'ssl' | 'none';
  last_send: { ok: boolean; reason: string | null; at: string } | null;
  break_glass: { open: boolean; reason: string | null };
}
export interface MailSettings {
  provider?: 'api' | 'smtp';
  mail_from?: string | null;
  resend_key?: string | null;
  smtp_host?: string | null;
  smtp_port?: number;
  smtp_user?: string | null;
  smtp_password?: string | null;
  smtp_security?: 'starttls' | 'ssl' | 'none';
}

/** Single sign-on and directory settings (docs/sign-in.md): GET /v1/settings/sso. */
export interface GroupMapping {
  group: string;
  role: Role;
  teams: string[];
  tags: string[];
}
export interface LdapSettingsView {
  urls: string[];
  bind_dn: string;
  bind_password_set: boolean;
  fingerprint: string | null;
  kind: 'active_directory' | 'openldap' | 'other';
  base_dn: string;
  login_attributes: string[];
  email_attribute: string;
  name_attribute: string;
  domain: string | null;
  netbios: string | null;
  person_filter: string;
  group_filter: string;
  disabled_filter: string | null;
  membership: 'memberOf' | 'member' | 'uniqueMember' | 'memberUid';
  page_size: number;
  size_limit: number | null;
}
export interface SyncResult {
  ok: boolean;
  at: string;
  by: string;
  reason: string | null;
  members: number;
  added?: string[];
  changed?: Array<{ email: string; changes: Record<string, { from: unknown; to: unknown }> }>;
  suspended?: string[];
  restored?: string[];
  kept_last_owner?: string[];
  hand_added?: string[];
  skipped: { disabled: number; no_address: string[]; outside_policy: string[]; same_address: string[] };
}
export interface SsoView {
  version: number;
  updated_at: string | null;
  updated_by: string | null;
  mode: Status['auth']['sso']['mode'];
  console_address: string | null;
  console_address_source: 'env' | 'setting';
  label: string;
  mixed_mode: boolean;
  sync_minutes: number;
  recheck_hours: number;
  oidc: {
    issuer: string;
    client_id: string;
    client_secret_set: boolean;
    redirect_uri: string | null;
    scopes: string;
    email_claim: string;
    groups_claim: string;
  } | null;
  ldap: LdapSettingsView | null;
  mappings: GroupMapping[];
  last_sync: SyncResult | null;
}
export type SsoInput = Partial<Omit<SsoView, 'oidc' | 'ldap' | 'last_sync' | 'mode' | 'console_address_source'>> & {
  oidc?: { issuer: string; client_id: string; client_secret?: string; scopes?: string; email_claim?: string; groups_claim?: string } | null;
  ldap?: (Partial<LdapSettingsView> & { urls: string[]; bind_dn: string; bind_password?: string }) | null;
};
export interface Certificate {
  subject: string;
  issuer: string;
  fingerprint: string;
  valid_from: string;
  valid_to: string;
}
export interface DirectoryAttempt {
  url: string;
  ok: boolean;
  problem: string | null;
}
export type Discovery =
  | {
      ok: true;
      found: Omit<LdapSettingsView, 'bind_password_set'>;
      tried: DirectoryAttempt[];
      vendor: string | null;
      naming_contexts: string[];
      failover: string[];
      paging: boolean;
      referrals: string[];
      people: number;
      groups: number;
    }
  | { ok: false; problem: 'untrusted_certificate'; certificate: Certificate; tried: DirectoryAttempt[] }
  | { ok: false; problem: 'unreachable' | 'bind_refused' | 'failed'; message: string; tried: DirectoryAttempt[] };
export interface DirectoryGroup {
  dn: string;
  name: string;
  aliases: string[];
  ids: string[];
}
export interface SsoTestReport {
  oidc: { ok: boolean; problem: string | null; issuer: string } | null;
  ldap: { ok: boolean; problem: string | null; url: string | null; tls: string | null; mappings: Array<{ group: string; found: boolean }> } | null;
}

/** The on-call recipients and notification targets (docs/notifications.md). */
export interface NotifySettings {
  recipients: string[];
  targets: string[];
  version: number;
  updated_at: string | null;
  updated_by: string | null;
}
export interface ChannelState {
  channel_kind: 'email' | 'target';
  name: string;
  ok: boolean;
  last_problem: string | null;
  last_attempt_at: string;
  last_ok_at: string | null;
}
export interface NotifyStatus {
  recipients: string[];
  targets: string[];
  nobody: string | null;
  pending: number;
  channels: Array<{ channel_kind: 'email' | 'target'; name: string; state: ChannelState | null }>;
  problems: Array<{ channel_kind: 'email' | 'target'; name: string; problem: string; at: string }>;
}
export interface DoctorComponent {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  detail: string;
  fix: string | null;
}
export interface DoctorReport {
  ok: boolean;
  checked_at: string;
  checks: Array<{ name: string; ok: boolean; level: 'ok' | 'warn' | 'fail'; detail: string }>;
  components: DoctorComponent[];
}

export const settingsApi = {
  notifySettings: () => call<NotifySettings>('GET', '/v1/settings/notifications'),
  /** `version` makes a change since the settings were read a 409 `version_conflict`. */
  saveNotifySettings: (s: { recipients: string[]; targets: string[]; version?: number }) => call<NotifySettings>('PUT', '/v1/settings/notifications', s),
  notifications: () => call<NotifyStatus>('GET', '/v1/notifications'),
  doctor: () => call<DoctorReport>('GET', '/v1/doctor'),

  catalogue: () => call<{ kinds: ConnectorKind[] }>('GET', '/v1/connectors/catalogue'),
  connectors: () => call<ConnectorList>('GET', '/v1/connectors'),
  /** Nothing is saved; with `name` of a saved connector, blank secrets are taken from it. */
  testConnector: (kind: string, settings: Record<string, unknown>, name?: string) =>
    call<TestReport>('POST', '/v1/connectors/test', { kind, settings, ...(name ? { name } : {}) }),
  saveConnector: (name: string, kind: string, settings: Record<string, unknown>) =>
    call<Connector>('PUT', `/v1/connectors/${encodeURIComponent(name)}`, { kind, settings }),
  removeConnector: (name: string) => call<{ name: string; removed: true }>('DELETE', `/v1/connectors/${encodeURIComponent(name)}`),
  checkConnector: (name: string) => call<Connector & { check: TestReport | null }>('POST', `/v1/connectors/${encodeURIComponent(name)}/check`),

  policy: () => call<Policy>('GET', '/v1/policy'),
  policySchema: () => call<JsonSchema>('GET', '/v1/policy/schema'),
  /** `version` makes a change of the policy since it was read a 409 `policy_version_conflict`. */
  savePolicy: (doc: PolicyDocument, version?: number) => call<Policy>('PUT', '/v1/policy', version === undefined ? doc : { ...doc, version }),

  people: () => call<{ people: Person[] }>('GET', '/v1/people'),
  addPerson: (p: { email: string; name: string; role: Role; teams?: string[]; tags?: string[] }) => call<{ person: Person }>('POST', '/v1/people', p),
  changePerson: (email: string, patch: PersonPatch) => call<{ person: Person }>('PATCH', `/v1/people/${encodeURIComponent(email)}`, patch),
  /** The password is answered once: show it, never keep it. */
  givePassword: (email: string, expires: PasswordEnd) =>
    call<{ password: string; expires_at: string | null }>('POST', `/v1/people/${encodeURIComponent(email)}/password`, { expires }),
  removePassword: (email: string) => call<unknown>('DELETE', `/v1/people/${encodeURIComponent(email)}/password`),

  access: () => call<AccessPolicy & { disposable_count: number }>('GET', '/v1/settings/access'),
  saveAccess: (p: AccessPolicy) => call<AccessPolicy & { disposable_count: number }>('PUT', '/v1/settings/access', p),
  mail: () => call<MailView>('GET', '/v1/settings/mail'),
  saveMail: (s: MailSettings) => call<MailView>('PUT', '/v1/settings/mail', s),
  testMail: (to?: string) => call<{ ok: true; to: string; recipients: string[]; provider: string }>('POST', '/v1/settings/mail/test', to ? { to } : {}),

  sso: () => call<SsoView>('GET', '/v1/settings/sso'),
  /** `version` makes a change since the settings were read a 409 `version_conflict`. */
  saveSso: (s: SsoInput) => call<SsoView>('PUT', '/v1/settings/sso', s),
  /** Nothing is saved; without a password, the saved one (same addresses and account). */
  discoverDirectory: (d: { addresses: string[]; bind_dn: string; bind_password?: string; fingerprint?: string | null }) =>
    call<Discovery>('POST', '/v1/settings/sso/discover', d),
  directoryGroups: (q: string) => call<{ groups: DirectoryGroup[] }>('GET', `/v1/settings/sso/groups${params({ q })}`),
  testSso: () => call<SsoTestReport>('POST', '/v1/settings/sso/test'),
  syncNow: () => call<SyncResult>('POST', '/v1/settings/sso/sync'),
};

/** Owners only: give or remove passwords, add or change owners (docs/sign-in.md). */
export const isOwner = (me: Me | null): boolean => me !== null && me.role === 'owner';
/** An error in words for a page: the server's message (which names the field), else its code described. */
export const failure = (e: unknown): string => (e instanceof Error ? e.message : String(e));

// ---- the estate (docs/estate.md)

export type LinkKind = 'repository' | 'alert' | 'workload' | 'database' | 'runbook';
export interface EstateLinkInput {
  kind: LinkKind;
  match?: string;
  connector?: string;
  path?: string;
  name?: string;
}
export interface EstateLink extends EstateLinkInput {
  origin: string;
  certain: boolean;
}
export interface EstateService {
  name: string;
  owner: string | null;
  team: string | null;
  tier: number | null;
  approvers: string[];
  technologies: string[];
  health_url: string | null;
  links: EstateLink[];
  depends_on: { service: string; origin: string }[];
  overridden: string[];
  added_by: string;
  added_at: string;
}
export interface EstateCandidate {
  name: string;
  owner: string | null;
  team: string | null;
  technologies: string[];
  links: EstateLink[];
  sources: { connector: string | null; how: string }[];
}
export interface UnplacedAlert {
  source: string;
  name: string;
  count: number;
  last_seen: string;
}
export interface Estate {
  services: EstateService[];
  candidates: EstateCandidate[];
  unplaced: UnplacedAlert[];
  built_at: string | null;
  version: number;
}
export interface OverrideEntry {
  owner?: string;
  team?: string;
  tier?: number;
  approvers?: string[];
  technologies?: string[];
  links?: EstateLinkInput[];
  depends_on?: string[];
  health_url?: string;
}
/** What makes an estate change wait for two approvals: a lower tier, a removal, who approves a tier-1 or tier-2 service. */
export interface GuardedFields {
  tier?: { from: number | null; to: number | null };
  removed?: true;
  approvers?: { from: string[]; to: string[] };
}
export interface EstateOverrides {
  services: Record<string, OverrideEntry>;
  version: number;
  updated_at: string | null;
  updated_by: string | null;
  source: 'file' | 'api';
  /** Changes waiting for two approvals, by service. */
  pending: { service: string; request_id: string; fields: GuardedFields }[];
  /** After a PUT: the approval requests it opened. */
  asked?: string[];
}
export interface Suggestion {
  id: string;
  service: string;
  depends_on: string;
  evidence: Record<string, unknown>[];
  score: number;
  state: string;
}

export const estateApi = {
  estate: () => call<Estate>('GET', '/v1/estate'),
  service: (name: string) => call<{ service: EstateService }>('GET', `/v1/estate/services/${encodeURIComponent(name)}`),
  overrides: () => call<EstateOverrides>('GET', '/v1/estate/overrides'),
  /** Services named are set whole (`null` removes one); `version` makes a change since reading a 409. */
  putOverrides: (services: Record<string, OverrideEntry | null>, version: number) =>
    call<EstateOverrides>('PUT', '/v1/estate/overrides', { services, version }),
  suggestions: () => call<{ suggestions: Suggestion[] }>('GET', '/v1/estate/suggestions'),
  decide: (id: string, how: 'confirm' | 'dismiss') => call<{ suggestion: Suggestion }>('POST', `/v1/estate/suggestions/${how}`, { id }),
  build: () => call<{ job: { id: string } }>('POST', '/v1/estate/build', {}),
};

// The study (docs/study.md): a read-only rehearsal of every cause on every added service.
export type StudyState = 'idle' | 'running' | 'stopping' | 'finished' | 'failed';
export interface StudyEvidence {
  source: string;
  kind: string;
  query: string;
  at: string;
  observed: unknown;
  excerpt: string;
}
export interface StudyReport {
  finished_at: string;
  cut_short: boolean;
  provable_share: number;
  pairs: { total: number; can_prove: number; cant_yet: number; at_the_alert: number };
  holding_now: { service: string; cause: string; evidence: StudyEvidence[] }[];
  obstacles: { kind: string; count: number; fix: string; pairs: { service: string; cause: string }[] }[];
  services: { service: string; tier: number | null; owner: string | null; provable_share: number; holding_now: number }[];
}
export interface Study {
  id: string | null;
  state: StudyState;
  started_at: string | null;
  by: string | null;
  minutes: number | null;
  progress: { done: number; total: number };
  finished_at: string | null;
  cut_short: boolean | null;
  reason: string | null;
  report: StudyReport | null;
}

export const studyApi = {
  study: () => call<Study>('GET', '/v1/study'),
  start: (minutes: number) => call<Study>('POST', '/v1/study', { minutes }),
  stop: () => call<Study>('POST', '/v1/study/stop', {}),
};

// The keychain (docs/keychain.md): installs that share settings, one home and its members.
export type KeychainPart = 'connectors' | 'policy' | 'access_policy' | 'mail' | 'sso' | 'estate_overrides' | 'packs_settings';
export const KEYCHAIN_PARTS: { part: KeychainPart; label: string }[] = [
  { part: 'connectors', label: 'Connectors' },
  { part: 'policy', label: 'Policy' },
  { part: 'access_policy', label: 'Access policy' },
  { part: 'mail', label: 'Mail' },
  { part: 'sso', label: 'Single sign-on' },
  { part: 'estate_overrides', label: 'Estate overrides' },
  { part: 'packs_settings', label: 'Packs’ check settings' },
];
export type MemberState = 'pairing' | 'active' | 'not_answering' | 'gone';
export interface KeychainMember {
  install: string;
  fingerprint: string;
  address: string | null;
  state: MemberState;
  last_seen: string | null;
  version: string | null;
  paired_at: string;
  own: KeychainPart[];
  applied: Partial<Record<KeychainPart, number | null>>;
  self: boolean;
}
export interface KeychainHome {
  install: string;
  fingerprint: string;
  address: string | null;
  version: string | null;
  self: boolean;
  last_contact_at: string | null;
  last_problem: string | null;
  lost: boolean;
  take_over_allowed_at: string | null;
}
export interface KeychainPartView {
  part: KeychainPart;
  carried: boolean;
  own: boolean;
  epoch: number | null;
  version: number | null;
  at: string | null;
  refused: { epoch: number; version: number; reason: string; at: string } | null;
}
export interface PollResult {
  ok: boolean;
  problem: string | null;
  applied: { part: KeychainPart; epoch: number; version: number }[];
  refused: { part: KeychainPart; epoch: number; version: number; reason: string }[];
}
export interface Keychain {
  role: 'none' | 'home' | 'member';
  keychain: string | null;
  epoch: number | null;
  install: string | null;
  fingerprint: string;
  keychain_fingerprint: string | null;
  home: KeychainHome | null;
  members: KeychainMember[];
  scope: KeychainPart[];
  own: { install: string; part: KeychainPart }[];
  parts: KeychainPartView[];
  site_keys: { id: string; created_at: string; created_by: string; expires_at: string }[];
  installs: { used: number; allowed: number | null } | null;
  demoted: { at: string; epoch: number; by: { name: string; fingerprint: string; address: string | null } } | null;
  sync?: PollResult | null;
}

export const keychainApi = {
  view: () => call<Keychain>('GET', '/v1/keychain'),
  makeHome: (body: { name?: string; address?: string }) => call<Keychain>('POST', '/v1/keychain/home', body),
  takeOver: () => call<Keychain>('POST', '/v1/keychain/home', { take_over: true }),
  siteKey: () => call<{ site_key: string; id: string; expires_at: string }>('POST', '/v1/keychain/site-keys', {}),
  join: (body: { home: string; site_key: string; name?: string; address?: string }) => call<Keychain>('POST', '/v1/keychain/join', body),
  scope: (parts: KeychainPart[]) => call<Keychain>('POST', '/v1/keychain/scope', { parts }),
  own: (install: string, part: KeychainPart, own: boolean) => call<Keychain>('POST', '/v1/keychain/own', { install, part, own }),
  sync: () => call<Keychain>('POST', '/v1/keychain/sync', {}),
  remove: (install: string) => call<{ install: string; removed: true }>('DELETE', `/v1/keychain/members/${encodeURIComponent(install)}`),
};
