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
 *   requests it was sent.
 * - `connectorCases(dir)`: a connector's `fixtures/*.json` (settings, the call, the recorded
 *   answers, what it must answer), each run against a recorded server.
 *
 * Test code: it starts servers and loads plugins, never part of the running service.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ConnectorContext, ConnectorQueryRequest, ConnectorRangeRequest, LogFields } from './contract.ts';
import { pluginHttp } from './http-client.ts';
import { pluginLibrary } from './lib/index.ts';
import { loadPlugins, type LoadedPlugin, type PluginRegistry } from './loader.ts';
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
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://recorded');
    const method = req.method ?? 'GET';
    const auth = req.headers.authorization;
    requests.push({ method, path: url.pathname, query: Object.fromEntries(url.searchParams), auth: auth === undefined ? null : auth.split(' ')[0]! });
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
 * One case of a connector's `fixtures/<case>.json`: `call` (`test`, `query` or `range`) with
 * `settings` and `request`, against a server answering `answers`, must answer `expect` (compared
 * whole). `{{server}}` anywhere in settings, request or expect is the recorded server's address.
 * `requests`, when given, are the requests it must send, in order.
 */
export interface ConnectorCaseFile {
  name?: string;
  call: 'test' | 'query' | 'range';
  settings: Record<string, unknown>;
  request?: ConnectorQueryRequest | ConnectorRangeRequest;
  answers: RecordedAnswer[];
  expect: unknown;
  requests?: Array<Partial<SeenRequest>>;
}

export interface ConnectorCase {
  /** `fixtures/<file>`. */
  file: string;
  name: string;
  /** Runs the call; what it answered, what it had to, and the requests it sent (against `requests` when the file names them). */
  run(): Promise<{ got: unknown; expected: unknown; requests: SeenRequest[]; expectedRequests: Array<Partial<SeenRequest>> | null }>;
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
  const { plugin } = await loadPluginFolder(dir);
  const server = await recordedServer(doc.answers);
  try {
    const fill = <T>(v: T): T => JSON.parse(JSON.stringify(v ?? null).replaceAll('{{server}}', server.url)) as T;
    const ctx = connectorContext(fill(doc.settings));
    const method = (plugin as Record<string, unknown>)[doc.call];
    if (typeof method !== 'function') throw new Error(`the connector has no ${doc.call}()`);
    const got = doc.call === 'test' ? await method.call(plugin, ctx) : await method.call(plugin, ctx, fill(doc.request));
    return { got, expected: fill(doc.expect), requests: server.requests, expectedRequests: doc.requests ?? null };
  } finally {
    await server.close();
  }
}
