/**
 * The console's one way to the HTTP API: every page goes through `api`. The session token lives
 * in sessionStorage (per tab, gone when the tab closes) and nowhere else; everything else the
 * console shows is read from the API when shown.
 *
 * Over 300 lines and one concept: the console's side of the API contract (docs/api.md). It is
 * the one `call` with its error and session handling and the `api` / `settingsApi` methods,
 * grouped by the areas of docs/api.md, with the small rules that read their answers (`canChange`,
 * `mayDecide`, `needsBy`). The answers' types are the server's own (`host/api-types.ts`),
 * re-exported here; only what the console sends (bodies, filters) is declared here. Watching the
 * ledger head for live pages is a separate concern: `live.ts`.
 */

// The answers' types are the server's (host/api-types.ts, type-only, so the build erases these
// imports): a change on the server that breaks a page fails `npm run typecheck:web`.
export type * from '../../../host/api-types.ts';
import type {
  AccessPolicy,
  Approval,
  ApprovalState,
  AutonomyChange,
  AutonomyOverview,
  Connector,
  ConnectorKind,
  ConnectorList,
  Digest,
  DirectoryGroup,
  Discovery,
  DoctorReport,
  EmailCodes,
  EpisodeDetail,
  EpisodePage,
  Estate,
  EstateOverrides,
  EstateService,
  HaltAnswer,
  Keychain,
  KeychainPart,
  LdapSettingsView,
  LedgerEvent,
  LoginAnswer,
  MailSettings,
  MailView,
  Me,
  NotifySettings,
  NotifyStatus,
  OverrideEntry,
  PasswordEnd,
  Person,
  PersonPatch,
  Policy,
  PolicyDocument,
  Role,
  SessionAnswer,
  SettableLevel,
  SsoTestReport,
  SsoView,
  Status,
  Study,
  Suggestion,
  SyncResult,
  TakenAction,
  TestReport,
  User,
  VerifyReport,
} from '../../../host/api-types.ts';

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
  ledgerHead: () => call<Pick<Status, 'ledger_head'>>('GET', '/v1/status', undefined, 'none').then((s) => s.ledger_head),
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

export type SsoInput = Partial<Omit<SsoView, 'oidc' | 'ldap' | 'last_sync' | 'mode' | 'console_address_source'>> & {
  oidc?: { issuer: string; client_id: string; client_secret?: string; scopes?: string; email_claim?: string; groups_claim?: string } | null;
  ldap?: (Partial<LdapSettingsView> & { urls: string[]; bind_dn: string; bind_password?: string }) | null;
};

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

export const studyApi = {
  study: () => call<Study>('GET', '/v1/study'),
  start: (minutes: number) => call<Study>('POST', '/v1/study', { minutes }),
  stop: () => call<Study>('POST', '/v1/study/stop', {}),
};

// The keychain (docs/keychain.md): installs that share settings, one home and its members.
export const KEYCHAIN_PARTS: { part: KeychainPart; label: string }[] = [
  { part: 'connectors', label: 'Connectors' },
  { part: 'policy', label: 'Policy' },
  { part: 'access_policy', label: 'Access policy' },
  { part: 'mail', label: 'Mail' },
  { part: 'sso', label: 'Single sign-on' },
  { part: 'estate_overrides', label: 'Estate overrides' },
  { part: 'packs_settings', label: 'Packs’ check settings' },
];

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
