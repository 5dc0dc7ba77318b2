import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';
import { CauseCatalogue, type Cause } from '../../host/investigation/catalogue.ts';
import { checkContext, type CheckInputs, type ReaderSource, type Readers } from '../../host/investigation/context.ts';
import { readFailure } from '../../host/investigation/read-failure.ts';
import { runCheck, unknownVerdict, type VerdictResult } from '../../host/investigation/run-check.ts';
import { silentLogger } from '../../host/log.ts';
import type { ChangeEvent, Changes, Commit, ConnectorContext, HttpReading, ReadCapability } from '../../host/plugins/contract.ts';
import { pluginHttp } from '../../host/plugins/http-client.ts';
import { pluginLibrary } from '../../host/plugins/lib/index.ts';
import { loadPlugins } from '../../host/plugins/loader.ts';
import { clip } from '../../host/text.ts';
import gitPlugin from '../../plugins/connectors/git/index.ts';

/**
 * Live readers for the packs' tests, standing in for the host's (which the investigation issue
 * builds): `changes` calls the git connector plugin's `changes` for each repository link of the
 * service, with the connector settings given, and answers the ledger's deploy/action events from
 * a recorded list; `http` GETs through the host's plugin HTTP client. Nothing else is readable.
 */

const PACKS = fileURLToPath(new URL('../../packs/', import.meta.url));
const silentPluginLog = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** The causes of a shipped pack, loaded by the host's plugin loader (the test fails when the pack is broken). */
export async function loadPack(t: ExecutionContext, name: string): Promise<Map<string, Cause>> {
  const registry = await loadPlugins({ dirs: [PACKS], log: silentLogger() });
  const dir = path.join(PACKS, name);
  t.deepEqual(
    registry.broken.filter((b) => b.dir === dir).map((b) => b.problem),
    [],
    `pack ${name} loads`,
  );
  return new Map(new CauseCatalogue(registry).causes.filter((c) => c.pack === name).map((c) => [c.id, c]));
}

/** A check's inputs with defaults: service `orders` in the estate, opened at `at`, no signals. */
export function checkInputs(at: string, more: Partial<Omit<CheckInputs, 'service'>> & { service?: Partial<CheckInputs['service']> } = {}): CheckInputs {
  const service = {
    name: 'orders',
    owner: null,
    team: null,
    tier: null,
    technologies: [],
    health_url: null,
    links: [],
    depends_on: [],
    in_estate: true,
    ...more.service,
  };
  return {
    episode: { id: 'ep-live', service: service.name, opened_at: at },
    at,
    moment: 'opening',
    signals: [],
    related: { dependencies: [], history: [] },
    overrides: {},
    ...more,
    service,
  };
}

/** What the live source reads from: git connector settings by connector name, and recorded ledger events. */
export interface LiveWorld {
  /** Settings of each git connector, by its configured name (the links' `connector`). */
  git?: Record<string, Record<string, unknown>>;
  /** The ledger's events, as the host's ledger reader would answer them. */
  events?: ChangeEvent[];
}

const connectorCtx = (settings: Record<string, unknown>, signal: AbortSignal): ConnectorContext => ({
  log: silentPluginLog,
  settings,
  signal,
  timeoutMs: 15_000,
  http: pluginHttp({ settings, signal, secrets: [] }),
  lib: pluginLibrary,
});

/** Readers over the real git repositories and HTTP servers of a test. */
export function liveSource(inputs: CheckInputs, world: LiveWorld): ReaderSource {
  const cannot = (what: string) => readFailure('nothing connected can read it', `this test connects no ${what}`);
  const readers = (signal: AbortSignal): Readers => ({
    metrics: {
      query: () => Promise.reject(cannot('metrics')),
      range: () => Promise.reject(cannot('metrics')),
    },
    ledger: { events: () => Promise.reject(cannot('ledger')) },
    read: (capability) => Promise.reject(cannot(capability)),
    changes: {
      since: async (since, until = inputs.at): Promise<Changes> => {
        const out: Changes = { commits: [], events: [], gaps: [] };
        const repos = inputs.service.links.filter((l) => l.kind === 'repository');
        if (repos.length === 0)
          out.gaps.push({
            source: 'estate',
            obstacle: 'nothing connected can read it',
            problem: `no repository is linked to ${inputs.service.name} in the estate`,
          });
        for (const l of repos) {
          const settings = l.connector === undefined ? undefined : world.git?.[l.connector];
          if (settings === undefined) {
            out.gaps.push({
              source: l.connector ?? 'estate',
              obstacle: 'nothing connected can read it',
              problem: `no connector ${l.connector ?? '(none named)'}`,
            });
            continue;
          }
          const r = await gitPlugin.changes!(connectorCtx(settings, signal), { since, until, ...(l.path === undefined ? {} : { path: l.path }) });
          if (!r.ok) out.gaps.push({ source: l.connector!, obstacle: 'the read was refused or failed', problem: r.problem ?? 'failed' });
          else out.commits.push(...(r.commits ?? []).map((c): Commit => ({ source: l.connector!, path: l.path ?? '.', ...c })));
        }
        const from = Date.parse(since);
        const to = Date.parse(until);
        out.events = (world.events ?? [])
          .filter((e) => (e.type === 'human.deploy' || e.type === 'human.action') && Date.parse(e.at) >= from && Date.parse(e.at) <= to)
          .sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
        out.commits.sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
        return out;
      },
    },
    http: {
      get: async (url, opts): Promise<HttpReading> => {
        const timeoutS = Math.min(opts?.timeout_s ?? 5, 15);
        const started = performance.now();
        const a = await pluginHttp({ settings: {}, signal, secrets: [] }).request({ url, timeoutS, maxBodyBytes: 64 * 1024 });
        const base = { source: 'health_url', query: `GET ${url}`, at: new Date().toISOString() };
        return a.ok
          ? { ...base, answered: true, status: a.status, took_ms: a.took_ms, excerpt: clip(a.text, 2000, '…') }
          : { ...base, answered: false, took_ms: a.took_ms ?? Math.round(performance.now() - started), problem: a.problem, failure: a.failure ?? 'other' };
      },
    },
  });
  const served: ReadCapability[] = ['changes', 'http', 'episodes'];
  return {
    obstacle: (cap) => (served.includes(cap) ? null : { obstacle: 'nothing connected can read it', problem: `this test connects no ${cap}` }),
    readers,
    secrets: () => [],
  };
}

/** Runs a cause as an investigation does: capabilities first, then the guarded check in a frozen context. */
export async function runLive(cause: Cause, inputs: CheckInputs, world: LiveWorld = {}): Promise<VerdictResult> {
  const source = liveSource(inputs, world);
  for (const cap of cause.reads) {
    const o = source.obstacle(cap);
    if (o !== null) return unknownVerdict(cause, o.obstacle, o.problem);
  }
  return runCheck(cause, (signal, deadline) => checkContext(cause, inputs, source, silentPluginLog, signal, deadline), {
    timeoutMs: 20_000,
    secrets: source.secrets(),
    at: inputs.at,
  });
}
