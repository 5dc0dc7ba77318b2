/**
 * The plugin test kit: what a plugin folder's own tests need to test it alone, the same code the
 * project's contract suite (test/plugins/plugin-contract.test.ts) runs over every shipped plugin. Offered
 * through the contract module (`import { ... } from '<host>/plugins/contract.ts'` in a test; the
 * plugin itself still imports the contract with `import type` only). docs/plugins.md walks a
 * vendor through it.
 *
 * - `loadPluginFolder(dir)`: the folder through the host's own loader (manifest, imports, exports);
 *   a broken plugin throws with the loader's words.
 * - `packScenarios(dir)`: each cause of a pack with its recorded scenarios (`scenarios/*.json`),
 *   and `replay()` running the cause on one exactly as an investigation does.
 * - `connectorContext(settings)`: the context the host hands a connector (its HTTP client, an
 *   abort signal, a log whose lines are kept in `lines`).
 * - `recordedServer(answers)`: a local HTTP server answering recorded answers and keeping the
 *   requests it was sent (method, path, query, headers, body; of `Authorization` its scheme only).
 * - `connectorCases(dir)`: a connector's `fixtures/*.json` (settings, the call: `test`, `query`,
 *   `range`, `pollAlerts`, `notify`, `rehearse`, `act` or `undo`, the recorded answers, what it
 *   must answer), each run against a recorded server; `checkCase(t, c)` asserts one with ava's `t`.
 * - `testNeeding(test, missing, title, fn)`: a test that needs a live peer (a database, the `git`
 *   binary): skipped with the reason when it is missing, failed instead under `CI=true`;
 *   `nothingListening(what, host, port)` says whether a server peer is missing.
 *
 * Test code: it starts servers and loads plugins, never part of the running service.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ActionRequest, ConnectorContext, ConnectorQueryRequest, ConnectorRangeRequest, LogFields, NotifyMessage } from './contract.ts';
import { pluginHttp } from './http-client.ts';
export { nothingListening, testNeeding } from './testkit-needs.ts';
import { pluginLibrary } from './lib/index.ts';
import { loadPlugins, type LoadedPlugin, type PluginRegistry } from './loader.ts';
import { getAt, secretStrings } from '../connectors/secrets.ts';
import { secretPointers } from '../connectors/settings-schema.ts';
import { silentLogger } from '../log.ts';
import { CauseCatalogue, type Cause } from '../investigation/catalogue.ts';
import { loadScenarios, replayScenario, type Scenario } from '../investigation/replay.ts';
import type { VerdictResult } from '../investigation/run-check.ts';

export type { LoadedPlugin, Cause, Scenario, VerdictResult };

const registries = new Map<string, Promise<PluginRegistry>>();

/**
 * The plugin in folder `dir`, loaded and checked by the host's loader; throws the loader's problem
 * when it is broken. The loader reads the folder's parent as it reads SERVICE_PLUGINS_DIR (so a
 * newer version of the same name beside it wins, as it would on a host), once per process.
 */
export async function loadPluginFolder(dir: string): Promise<LoadedPlugin> {
  const folder = path.resolve(dir);
  const parent = path.dirname(folder);
  if (!registries.has(parent)) registries.set(parent, loadPlugins({ dirs: [parent], log: silentLogger() }));
  const registry = await registries.get(parent)!;
  const broken = registry.broken.find((b) => b.dir === folder);
  if (broken !== undefined) throw new Error(broken.problem);
  const loaded = registry.loaded.find((l) => l.dir === folder) ?? registry.superseded.find((s) => s.dir === folder);
  if (loaded === undefined) throw new Error(`no plugin folder (plugin.json) at ${folder}`);
  if (!('plugin' in loaded)) throw new Error(`plugin "${loaded.name}" ${loaded.version} in ${folder} is superseded by ${loaded.by} beside it`);
  return loaded;
}

/** One recorded scenario of a pack's cause; `replay()` runs the cause on it as an investigation would. */
export interface PackScenario {
  cause: Cause;
  scenario: Scenario;
  replay(): Promise<VerdictResult>;
}

/** The causes of the pack in `dir` and every scenario of `scenarios/*.json`, in file order. */
export async function packScenarios(dir: string): Promise<{ causes: Cause[]; scenarios: PackScenario[]; unknownCauses: string[] }> {
  const loaded = await loadPluginFolder(dir);
  const causes = [...new CauseCatalogue({ loaded: [loaded], broken: [], superseded: [] }).causes];
  const recorded = loadScenarios(loaded.dir);
  const scenarios = causes.flatMap((cause) =>
    (recorded.get(cause.id) ?? []).map((scenario) => ({ cause, scenario, replay: () => replayScenario(cause, scenario) })),
  );
  return { causes, scenarios, unknownCauses: [...recorded.keys()].filter((id) => !causes.some((c) => c.id === id)) };
}

/**
 * A context as the host hands it to a connector's methods: `settings` as given, the host's HTTP
 * client (`ctx.http`, with its timeouts, redirect policy and wording), `signal` when given, and a
 * log whose lines are kept in `lines` (`<message> <fields as JSON>`). `secrets` are blanked out of
 * the HTTP client's problems, as the host does with a kind's secret settings.
 */
export function connectorContext<S extends Record<string, unknown>>(
  settings: S,
  opts: { signal?: AbortSignal; secrets?: string[] } = {},
): ConnectorContext<S> & { lines: string[] } {
  const lines: string[] = [];
  const line = (m: string, f?: LogFields) => void lines.push(`${m} ${JSON.stringify(f ?? {})}`);
  return {
    log: { info: line, warn: line, error: line },
    settings,
    ...(opts.signal === undefined ? {} : { signal: opts.signal }),
    http: pluginHttp({ settings, signal: opts.signal, secrets: opts.secrets ?? [] }),
    lib: pluginLibrary,
    lines,
  };
}

/** A recorded answer: to `method` (default GET) of `path` (the query string is not compared), `status` with `body` (JSON, or text as is). */
export interface RecordedAnswer {
  method?: string;
  path: string;
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/** A request the recorded server was sent. */
export interface SeenRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  /** The `Authorization` header's scheme only (`Basic`, `Bearer`...), never its credentials; null without one. */
  auth: string | null;
  /** The other headers, names in lower case; `authorization`, `proxy-authorization` and `cookie` are left out. */
  headers: Record<string, string>;
  /** The body: parsed when it is JSON, else its text; null when there is none. */
  body: unknown;
}

/** Headers that carry credentials: a seen request keeps none of them. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie']);

function bodyOf(text: string, type: string | undefined): unknown {
  if (text === '') return null;
  if (/json/i.test(type ?? ''))
    try {
      return JSON.parse(text) as unknown;
    } catch {
      /* not JSON after all: the text */
    }
  return text;
}

export interface RecordedServer {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  requests: SeenRequest[];
  close(): Promise<void>;
}

/** A local HTTP server answering `answers` (the first whose method and path match; 404 `{}` otherwise). Close it after the test. */
export async function recordedServer(answers: RecordedAnswer[]): Promise<RecordedServer> {
  const requests: SeenRequest[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://recorded');
    const method = req.method ?? 'GET';
    const auth = req.headers.authorization;
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = Object.fromEntries(
      Object.entries(req.headers)
        .filter(([k]) => !CREDENTIAL_HEADERS.has(k))
        .map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v)]),
    );
    requests.push({
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      auth: auth === undefined ? null : auth.split(' ')[0]!,
      headers,
      body: bodyOf(Buffer.concat(chunks).toString('utf8'), req.headers['content-type']),
    });
    const a = answers.find((x) => (x.method ?? 'GET').toUpperCase() === method && x.path === url.pathname);
    const body = a === undefined ? '{}' : typeof a.body === 'string' ? a.body : JSON.stringify(a.body ?? null);
    const json = a === undefined || typeof a.body !== 'string';
    res.writeHead(a === undefined ? 404 : (a.status ?? 200), { ...(json ? { 'content-type': 'application/json' } : {}), ...a?.headers });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

/**
 * The call a case makes, with the request the contract types it with: `test` and `pollAlerts`
 * take none; `query`, `range` and `notify` their request and message; `rehearse`, `act` and
 * `undo` an action (`undo` with what `act` answered in `undo`).
 */
export type ConnectorCaseCall =
  | { call: 'test' | 'pollAlerts'; request?: undefined }
  | { call: 'query'; request: ConnectorQueryRequest }
  | { call: 'range'; request: ConnectorRangeRequest }
  | { call: 'notify'; request: NotifyMessage }
  | { call: 'rehearse' | 'act'; request: ActionRequest }
  | { call: 'undo'; request: ActionRequest & { undo: Record<string, unknown> } };

const CALLS_WITHOUT_REQUEST = new Set(['test', 'pollAlerts']);
const CALLS_WITH_REQUEST = new Set(['query', 'range', 'notify', 'rehearse', 'act', 'undo']);

/**
 * One case of a connector's `fixtures/<case>.json`: `call` with `settings` and `request`
 * (see {@link ConnectorCaseCall}), against a server answering `answers`, must answer `expect`
 * (compared whole). `{{server}}` anywhere in settings, request or expect is the recorded server's
 * address; in `expect`, a value `"{{number}}"` or `"{{string}}"` stands for any number or string
 * there (a time taken, a generated id). `requests`, when given, are the requests it must send, in order, each compared with
 * ava's `t.like` (so a case names only what matters: method, path, `auth`, a header, the body).
 */
export type ConnectorCaseFile = ConnectorCaseCall & {
  name?: string;
  settings: Record<string, unknown>;
  answers: RecordedAnswer[];
  expect: unknown;
  requests?: Array<Partial<SeenRequest>>;
};

export interface ConnectorCase {
  /** `fixtures/<file>`. */
  file: string;
  name: string;
  /**
   * Runs the call; what it answered, what it had to, the requests it sent (against `requests`
   * when the file names them), and `leaked`: the secret settings (`writeOnly` in plugin.json, by
   * JSON pointer) whose value shows in the answer or a log line, which must be none.
   */
  run(): Promise<{
    got: unknown;
    expected: unknown;
    requests: SeenRequest[];
    expectedRequests: Array<Partial<SeenRequest>> | null;
    leaked: string[];
  }>;
}

/** The cases of the connector in `dir` (`fixtures/*.json`, by file name); none without a fixtures folder. */
export function connectorCases(dir: string): ConnectorCase[] {
  const fixtures = path.join(dir, 'fixtures');
  if (!existsSync(fixtures)) return [];
  return readdirSync(fixtures)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => {
      const doc = JSON.parse(readFileSync(path.join(fixtures, f), 'utf8')) as ConnectorCaseFile;
      return { file: `fixtures/${f}`, name: doc.name ?? f.replace(/\.json$/, ''), run: () => runCase(dir, doc) };
    });
}

async function runCase(dir: string, doc: ConnectorCaseFile): ReturnType<ConnectorCase['run']> {
  if (!CALLS_WITHOUT_REQUEST.has(doc.call) && !CALLS_WITH_REQUEST.has(doc.call))
    throw new Error(`unknown call "${String(doc.call)}": test, pollAlerts, query, range, notify, rehearse, act or undo`);
  if (CALLS_WITH_REQUEST.has(doc.call) && (typeof doc.request !== 'object' || doc.request === null)) throw new Error(`a ${doc.call} case needs its request`);
  const { plugin, manifest } = await loadPluginFolder(dir);
  const server = await recordedServer(doc.answers);
  try {
    const fill = <T>(v: T): T => JSON.parse(JSON.stringify(v ?? null).replaceAll('{{server}}', server.url)) as T;
    const settings = fill(doc.settings);
    const pointers = manifest.settings === undefined ? [] : secretPointers(manifest.settings);
    const secrets = pointers.map((p) => ({ p, values: secretStrings([getAt(settings, p)]) }));
    // As the host does: the HTTP client blanks the secret settings out of its problems.
    const ctx = connectorContext(settings, { secrets: secrets.flatMap((s) => s.values) });
    const method = (plugin as Record<string, unknown>)[doc.call];
    if (typeof method !== 'function') throw new Error(`the connector has no ${doc.call}()`);
    const got: unknown = CALLS_WITHOUT_REQUEST.has(doc.call) ? await method.call(plugin, ctx) : await method.call(plugin, ctx, fill(doc.request));
    const shown = JSON.stringify(got ?? null) + '\n' + ctx.lines.join('\n');
    const leaked = secrets.filter((s) => s.values.some((v) => shown.includes(v))).map((s) => s.p);
    return { got, expected: anyOf(fill(doc.expect), got), requests: server.requests, expectedRequests: doc.requests ?? null, leaked };
  } finally {
    await server.close();
  }
}

/** `expected` with each `"{{number}}"` or `"{{string}}"` made the value `got` has there, when it is one. */
function anyOf(expected: unknown, got: unknown): unknown {
  if (expected === '{{number}}') return typeof got === 'number' ? got : expected;
  if (expected === '{{string}}') return typeof got === 'string' ? got : expected;
  if (Array.isArray(expected)) return expected.map((e, i) => anyOf(e, Array.isArray(got) ? got[i] : undefined));
  if (typeof expected !== 'object' || expected === null) return expected;
  const at = typeof got === 'object' && got !== null ? (got as Record<string, unknown>) : {};
  return Object.fromEntries(Object.entries(expected).map(([k, e]) => [k, anyOf(e, at[k])]));
}

/** The assertions {@link checkCase} makes: ava's `t` has them. */
export interface CaseAssertions {
  deepEqual(actual: unknown, expected: unknown, message?: string): unknown;
  is(actual: unknown, expected: unknown, message?: string): unknown;
  like(actual: unknown, selector: Record<string, unknown>, message?: string): unknown;
}

/**
 * Runs one recorded case and asserts it with ava's `t`: the answer is the one recorded, no secret
 * setting shows in it or in a log line, and the requests sent are those the case names, in order.
 * What a connector's own test and the contract suite both run for each case.
 */
export async function checkCase(t: CaseAssertions, c: ConnectorCase): Promise<void> {
  const { got, expected, requests, expectedRequests, leaked } = await c.run();
  t.deepEqual(got, expected);
  t.deepEqual(leaked, [], 'no secret setting shows in the answer or in a log line');
  if (expectedRequests === null) return;
  t.is(requests.length, expectedRequests.length, JSON.stringify(requests.map((r) => `${r.method} ${r.path}`)));
  expectedRequests.forEach((r, i) => t.like(requests[i], r, `request ${i + 1}`));
}
