import type { ActionRequest, ActionResult, ConnectorContext } from '../../../host/plugins/contract.ts';
import { filterOf, parseMatchers, sameMatchers, silenceFilterOf, type Matcher } from './matchers.ts';
import { DEFAULT_TIMEOUT_S } from './settings.ts';
import { api, base, basicAuth, expire, settingsOf, statusProblem } from './silence-api.ts';

/**
 * The `silence` action: an Alertmanager silence of one alert (`alert`, its Alertmanager
 * fingerprint) by the given matchers for a bounded time (at most 24 h), made through API v2.
 * `rehearse` and `act` first make sure the silence is no wider than that alert: the alert fires
 * at this Alertmanager, the matchers name its every label, and they cover no other alert firing
 * now. `rehearse` then lists it; `act` creates the silence (or finds the one an earlier try of the
 * same action made: its comment carries the request's key); `undo` expires it. See README.md.
 */

/** `createdBy` of every silence this connector makes. */
export const CREATED_BY = 'oncall-service';
export const MIN_DURATION_S = 60;
/** Never longer than a day, whatever the caller asks. */
export const MAX_DURATION_S = 86_400;
const LISTED_ALERTS = 10;
const SILENCE_ID = /^[A-Za-z0-9-]{1,100}$/;
const FINGERPRINT = /^[A-Za-z0-9]{1,128}$/;

/** The tag in a silence's comment that ties it to one action (the request's key). */
export const keyTag = (key: string): string => `[oncall-key:${key}]`;

interface SilenceParams {
  /** The Alertmanager fingerprint of the one alert the silence is for. */
  alert: string;
  text: string;
  matchers: Matcher[];
  duration_s: number;
  comment: string | null;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** The params checked again here (the host validated them against the schema; a plugin does not rely on it). */
function paramsOf(ctx: ConnectorContext, action: ActionRequest): { ok: true; p: SilenceParams } | { ok: false; problem: string } {
  const { alert, matchers, duration_s, comment } = action.params;
  if (typeof alert !== 'string' || !FINGERPRINT.test(alert))
    return { ok: false, problem: 'alert must be the Alertmanager fingerprint of the alert to silence' };
  if (typeof matchers !== 'string') return { ok: false, problem: 'matchers must be a text such as alertname="PaymentsDown",service="payments"' };
  if (typeof duration_s !== 'number' || !Number.isInteger(duration_s) || duration_s < MIN_DURATION_S || duration_s > MAX_DURATION_S)
    return { ok: false, problem: `duration_s must be a whole number of seconds from ${MIN_DURATION_S} to ${MAX_DURATION_S} (24 h)` };
  if (comment !== undefined && typeof comment !== 'string') return { ok: false, problem: 'comment must be a text' };
  const parsed = parseMatchers(ctx.lib.matchers, matchers);
  if (!parsed.ok) return parsed;
  return { ok: true, p: { alert, text: parsed.matchers.map(filterOf).join(','), matchers: parsed.matchers, duration_s, comment: comment ?? null } };
}

interface Silence {
  id: string;
  state: string;
  endsAt: string;
  comment: string;
  createdBy: string;
  matchers: Matcher[];
}

function silenceOf(v: unknown): Silence | null {
  if (!isObj(v) || typeof v.id !== 'string') return null;
  const status = isObj(v.status) ? v.status : {};
  const matchers = Array.isArray(v.matchers)
    ? v.matchers.filter(isObj).map((m) => ({ name: String(m.name), value: String(m.value), isRegex: m.isRegex === true, isEqual: m.isEqual !== false }))
    : [];
  return {
    id: v.id,
    state: typeof status.state === 'string' ? status.state : 'unknown',
    endsAt: typeof v.endsAt === 'string' ? v.endsAt : '',
    comment: typeof v.comment === 'string' ? v.comment : '',
    createdBy: typeof v.createdBy === 'string' ? v.createdBy : '',
    matchers,
  };
}

/** The active (or pending) silence an earlier try of this action made, found by its key in the comment; null when none. */
async function existing(ctx: ConnectorContext, key: string, p: SilenceParams): Promise<{ ok: true; silence: Silence | null } | { ok: false; problem: string }> {
  const r = await api(
    ctx,
    'GET',
    '/api/v2/silences',
    p.matchers.map((m): [string, string] => ['filter', silenceFilterOf(m)]),
  );
  if (!r.ok) return r;
  if (!Array.isArray(r.body)) return { ok: false, problem: 'the silence list is not a JSON array; is url an Alertmanager (API v2)?' };
  const tag = keyTag(key);
  const found = r.body
    .map(silenceOf)
    .find(
      (s) =>
        s !== null &&
        (s.state === 'active' || s.state === 'pending') &&
        s.createdBy === CREATED_BY &&
        s.comment.includes(tag) &&
        sameMatchers(s.matchers, p.matchers),
    );
  return { ok: true, silence: found ?? null };
}

function forHow(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.round((seconds % 3600) / 60);
  return [h > 0 ? `${h} h` : '', m > 0 ? `${m} min` : ''].filter((x) => x !== '').join(' ') || `${seconds} s`;
}

function alertLine(a: unknown): string {
  const labels = isObj(a) && isObj(a.labels) ? a.labels : {};
  const name = typeof labels.alertname === 'string' ? labels.alertname : 'unnamed alert';
  const rest = Object.entries(labels)
    .filter(([k]) => k !== 'alertname')
    .map(([k, v]) => `${k}="${String(v)}"`)
    .join(',');
  const line = rest === '' ? name : `${name}{${rest}}`;
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/**
 * The alerts firing now that the matchers cover, and whether the silence is no wider than its one
 * alert: that alert is among them (it fires at this Alertmanager: the alert came from here), no
 * other is, and the matchers name every label it has (so it is that alert, not a wider set of
 * which a pushed copy named a few labels).
 */
async function covered(ctx: ConnectorContext, p: SilenceParams): Promise<{ ok: true; alerts: unknown[] } | { ok: false; problem: string }> {
  const r = await api(ctx, 'GET', '/api/v2/alerts', [['active', 'true'], ...p.matchers.map((m): [string, string] => ['filter', filterOf(m)])]);
  if (!r.ok) return r;
  if (!Array.isArray(r.body)) return { ok: false, problem: 'the alert list is not a JSON array; is url an Alertmanager (API v2)?' };
  if (r.body.length === 0) return { ok: false, problem: `no alert matches ${p.text} now: the silence would cover nothing` };
  const fingerprintOf = (a: unknown) => (isObj(a) && typeof a.fingerprint === 'string' ? a.fingerprint : null);
  const own = r.body.find((a) => fingerprintOf(a) === p.alert);
  if (own === undefined)
    return { ok: false, problem: `alert ${p.alert} does not fire at this Alertmanager under ${p.text}: the silence is not for an alert it holds` };
  const others = r.body.filter((a) => fingerprintOf(a) !== p.alert);
  if (others.length > 0)
    return {
      ok: false,
      problem: `${p.text} would also silence ${others.length} other alert${others.length === 1 ? '' : 's'} (${others.slice(0, LISTED_ALERTS).map(alertLine).join('; ')}): a silence covers its one alert only`,
    };
  const labels = isObj(own) && isObj(own.labels) ? own.labels : {};
  const named = new Map(p.matchers.filter((m) => m.isEqual && !m.isRegex).map((m) => [m.name, m.value]));
  const left = Object.entries(labels)
    .filter(([k, v]) => named.get(k) !== String(v))
    .map(([k]) => k);
  if (left.length > 0)
    return {
      ok: false,
      problem: `${p.text} leaves out labels of alert ${p.alert} (${left.slice(0, 10).join(', ')}): a silence names every label of its alert`,
    };
  return { ok: true, alerts: r.body };
}

/** Lists the alert the silence would cover, once sure it covers that one only; changes nothing. */
export async function rehearseSilence(ctx: ConnectorContext, action: ActionRequest): Promise<ActionResult> {
  const params = paramsOf(ctx, action);
  if (!params.ok) return { ok: false, problem: params.problem };
  const { p } = params;
  const found = await existing(ctx, action.key, p);
  if (!found.ok) return { ok: false, problem: found.problem };
  if (found.silence !== null)
    return {
      ok: true,
      problem: null,
      shown: `silence ${found.silence.id} for this action exists already (until ${found.silence.endsAt}); act would make no other`,
    };
  const c = await covered(ctx, p);
  if (!c.ok) return { ok: false, problem: c.problem };
  const n = c.alerts.length;
  return {
    ok: true,
    problem: null,
    shown: `would silence ${n} alert${n === 1 ? '' : 's'} matching ${p.text} for ${forHow(p.duration_s)}: ${c.alerts.map(alertLine).join('; ')}`,
  };
}

/** Creates the silence, or answers the one an earlier try of the same action made. */
export async function actSilence(ctx: ConnectorContext, action: ActionRequest): Promise<ActionResult> {
  const params = paramsOf(ctx, action);
  if (!params.ok) return { ok: false, problem: params.problem };
  const { p } = params;
  const found = await existing(ctx, action.key, p);
  if (!found.ok) return { ok: false, problem: found.problem };
  if (found.silence !== null)
    return {
      ok: true,
      problem: null,
      shown: `silence ${found.silence.id} of ${p.text} exists already for this action (until ${found.silence.endsAt})`,
      undo: { silence_id: found.silence.id },
    };
  const c = await covered(ctx, p);
  if (!c.ok) return { ok: false, problem: c.problem };
  const now = Date.now();
  const endsAt = new Date(now + p.duration_s * 1000).toISOString();
  const comment = `${p.comment ?? 'Silenced by the on-call service'} (episode ${action.episode.id}) ${keyTag(action.key)}`;
  const r = await api(ctx, 'POST', '/api/v2/silences', [], {
    matchers: p.matchers,
    startsAt: new Date(now).toISOString(),
    endsAt,
    createdBy: CREATED_BY,
    comment,
  });
  if (!r.ok) return { ok: false, problem: r.problem };
  const id = isObj(r.body) && typeof r.body.silenceID === 'string' ? r.body.silenceID : null;
  if (id === null) return { ok: false, problem: 'Alertmanager answered the new silence without its silenceID' };
  return { ok: true, problem: null, shown: `silenced ${p.text} for ${forHow(p.duration_s)} (until ${endsAt}): silence ${id}`, undo: { silence_id: id } };
}

/** Expires the silence `act` made; one already expired or gone is done. Refuses a silence this service did not make. */
export async function undoSilence(ctx: ConnectorContext, action: ActionRequest & { undo: Record<string, unknown> }): Promise<ActionResult> {
  const id = action.undo.silence_id;
  if (typeof id !== 'string' || !SILENCE_ID.test(id)) return { ok: false, problem: 'undo.silence_id must be the id of a silence' };
  const s = settingsOf(ctx);
  const r = await ctx.http.request({
    url: `${base(s)}/api/v2/silence/${encodeURIComponent(id)}`,
    headers: { accept: 'application/json', 'user-agent': 'oncall-connector-alertmanager/1.1' },
    ...basicAuth(s),
    timeoutS: s.timeout_s ?? DEFAULT_TIMEOUT_S,
  });
  if (!r.ok) return { ok: false, problem: r.problem };
  if (r.status === 404) return { ok: true, problem: null, shown: `silence ${id} no longer exists; nothing to expire` };
  const problem = statusProblem(r.status, r.where, r.text, r.headers.location);
  if (problem !== null) return { ok: false, problem };
  let silence: Silence | null = null;
  try {
    silence = silenceOf(JSON.parse(r.text) as unknown);
  } catch {
    /* reported below */
  }
  if (silence === null) return { ok: false, problem: `the answer about silence ${id} is not an Alertmanager silence` };
  if (silence.createdBy !== CREATED_BY || !silence.comment.includes(keyTag(action.key)))
    return { ok: false, problem: `silence ${id} was not made by this action (created by ${silence.createdBy || 'nobody named'}); left as it is` };
  if (silence.state === 'expired') return { ok: true, problem: null, shown: `silence ${id} has already expired` };
  const done = await expire(ctx, id);
  if (!done.ok) return { ok: false, problem: done.problem };
  return { ok: true, problem: null, shown: `expired silence ${id}` };
}
