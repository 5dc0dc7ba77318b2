import type { Clock } from '../clock.ts';
import type { Principal } from '../identity/principal.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { ActionRequest, ConnectorQueryRequest, NotifyMessage } from '../plugins/contract.ts';
import { actionable, actionWith, type ActionableConnector, type ActionReport, type UndoRequest } from './connector-actions.ts';
import type { SecretCipher } from '../secrets/cipher.ts';
import { discoverable, discoverWith, type DiscoveryReport } from './connector-discovery.ts';
import { canNotify, notifiable, notifyWith } from './connector-notify.ts';
import { pollable, pollWith, type PollReport } from './connector-poll.ts';
import { queryConnector, type QueryReport } from './connector-query.ts';
import { ConnectorTests } from './connector-tests.ts';
import { CarriedConnectors } from './connectors.carried.ts';
import type { ConnectorsFile } from './connectors.file.ts';
import type { ConnectorsRepo } from './connectors.repo.ts';
import { ConnectorStore, type ConnectorInput, type ConnectorView, type Resolved } from './connectors.store.ts';
import type { ConnectorKinds } from './kinds.ts';
import { TestMemory, type TestReport } from './test-memory.ts';

export type { ConnectorInput, ConnectorSource, ConnectorView } from './connectors.store.ts';
export type { QueryReport } from './connector-query.ts';
export type { ActionableConnector, ActionCall, ActionReport, UndoRequest } from './connector-actions.ts';
export { TEST_REMEMBERED_MS, type TestReport } from './test-memory.ts';
import { readableFor, readWith, type ReadableConnector, type ReadMethod, type ReadReport } from './connector-reads.ts';
import { secretValues } from './connector-calls.ts';
import type { ReadCapability } from '../plugins/contract.ts';

export interface ConnectorServiceDeps {
  repo: ConnectorsRepo;
  cipher: SecretCipher;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  kinds: ConnectorKinds;
  file: ConnectorsFile;
  /** Where `{"env": "VAR"}` secrets of connectors.json are read; default process.env. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Configured connectors, one façade over the files that each do one job:
 * - connectors.store.ts: console-added and file-managed connectors, their secrets, CRUD, the masked view;
 * - connector-tests.ts: test, check and the scheduled check (test-memory.ts: a test saved right after counts);
 * - connector-query.ts, connector-discovery.ts, connector-poll.ts, connector-notify.ts: the capabilities;
 * - connector-actions.ts: rehearse, act and undo of declared action kinds (for the acting area only);
 * - connectors.carried.ts: the console connectors as the keychain carries and applies them;
 * - connector-calls.ts: one guarded plugin call (runner.ts), whose failure is a typed
 *   {@link import('./connector-failure.ts').ConnectorFailure}, never a parsed sentence.
 */
export class ConnectorService {
  readonly kinds: ConnectorKinds;
  /** The connectors as the keychain carries them (connectors.carried.ts). */
  readonly carried: CarriedConnectors;
  readonly #store: ConnectorStore;
  readonly #tests: ConnectorTests;
  readonly #repo: ConnectorsRepo;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  readonly #log: Logger;

  constructor(deps: ConnectorServiceDeps) {
    const log = deps.log.child({ component: 'connectors' });
    const tests = new TestMemory(deps.clock);
    this.kinds = deps.kinds;
    this.#repo = deps.repo;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
    this.#log = log;
    this.#store = new ConnectorStore({ ...deps, log, env: deps.env ?? process.env, tests });
    this.carried = new CarriedConnectors({ store: this.#store, repo: deps.repo, cipher: deps.cipher, kinds: deps.kinds, clock: deps.clock });
    this.#tests = new ConnectorTests({ store: this.#store, repo: deps.repo, ledger: deps.ledger, clock: deps.clock, log, kinds: deps.kinds, tests });
    const file = deps.file;
    if (file.problem !== null) log.error({ file: file.path }, file.problem);
    for (const c of file.connectors) if (c.problem !== null) log.error({ file: file.path, connector: c.name }, c.problem);
  }

  /** Whether a name is defined in connectors.json (the API then answers 409 to changes). */
  isFileManaged(name: string): boolean {
    return this.#store.isFileManaged(name);
  }

  list(): Promise<{ connectors: ConnectorView[]; file: { path: string; problem: string | null } | null }> {
    return this.#store.list();
  }

  /**
   * Whether some connector can read a service's signals: today, whether any configured connector
   * passed its last check (which service each one covers comes with the estate).
   */
  async covers(_service: string): Promise<boolean> {
    return (await this.list()).connectors.some((c) => c.state === 'ok');
  }

  get(name: string): Promise<ConnectorView> {
    return this.#store.get(name);
  }

  /** Every configured connector's name (file and console). */
  async names(): Promise<string[]> {
    return (await this.list()).connectors.map((c) => c.name);
  }

  /** Adds or updates a console connector; answers whether it was created. */
  put(name: string, input: ConnectorInput, who: Principal): Promise<{ created: boolean; connector: ConnectorView }> {
    return this.#store.put(name, input, who);
  }

  remove(name: string, who: Principal): Promise<{ name: string; removed: true }> {
    return this.#store.remove(name, who);
  }

  /** See {@link ConnectorTests.test}. */
  test(input: ConnectorInput & { name?: string }, who: Principal): Promise<TestReport> {
    return this.#tests.test(input, who);
  }

  /** See {@link ConnectorTests.check}. */
  check(name: string, who: Principal | null): Promise<ConnectorView & { check: TestReport | null }> {
    return this.#tests.check(name, who);
  }

  /** See {@link ConnectorTests.checkOnSchedule}. */
  checkOnSchedule(name: string): Promise<{ ok: boolean | null; changed: boolean }> {
    return this.#tests.checkOnSchedule(name);
  }

  /** Runs a read-only query on a configured connector (connector-query.ts). */
  query(name: string, request: ConnectorQueryRequest, who: Principal): Promise<QueryReport> {
    return queryConnector({ store: this.#store, ledger: this.#ledger, log: this.#log }, name, request, who);
  }

  // ---- discovery (used by host/discovery; connector-discovery.ts)

  discoverable(): Promise<Array<{ name: string; kind: string; fault: string | null }>> {
    return discoverable(this.#store);
  }

  discover(name: string, timeoutMs: number): Promise<DiscoveryReport> {
    return discoverWith({ store: this.#store, log: this.#log }, name, timeoutMs);
  }

  // ---- polling (used by host/schedule/poller.ts; connector-poll.ts)

  pollable(): Promise<Array<{ name: string; kind: string; poll_s: number | null }>> {
    return pollable(this.#store);
  }

  poll<T>(name: string, take: (kind: string, alerts: unknown[]) => Promise<T>): Promise<PollReport<T>> {
    return pollWith({ store: this.#store, repo: this.#repo, ledger: this.#ledger, clock: this.#clock, log: this.#log }, name, take);
  }

  // ---- reads for checks (used by host/investigation; connector-reads.ts)

  /** The connectors whose kind serves a check capability (`reads` of the plugin). */
  readable(capability: ReadCapability): Promise<ReadableConnector[]> {
    return readableFor(this.#store, capability);
  }

  /** One read-only read for a check, cut off at the connector's timeout or `maxMs`. */
  read(name: string, method: ReadMethod, request: Record<string, unknown>, maxMs: number): Promise<ReadReport> {
    return readWith({ store: this.#store, log: this.#log }, name, method, request, maxMs);
  }

  /** The secret values of a connector's settings (blanked out of what checks keep). */
  async secretsOf(name: string): Promise<string[]> {
    return secretsIn(await this.#store.resolve(name));
  }

  /**
   * The same three reads for one investigation (or one check run): each connector is looked up
   * and its secrets decrypted once, when first needed, and used as it stood then for the rest of
   * the session, instead of once per read (a run of 34 causes made about 30 reads).
   */
  session(): { readable: ConnectorService['readable']; read: ConnectorService['read']; secretsOf: ConnectorService['secretsOf'] } {
    const once = new Map<string, Promise<Resolved>>();
    let all: Promise<Resolved[]> | null = null;
    const store = {
      resolve: (name: string) => {
        let r = once.get(name);
        if (r === undefined) once.set(name, (r = this.#store.resolve(name)));
        return r;
      },
      all: () => (all ??= this.#store.all()),
    };
    return {
      readable: (capability) => readableFor(store, capability),
      read: (name, method, request, maxMs) => readWith({ store, log: this.#log }, name, method, request, maxMs),
      secretsOf: async (name) => secretsIn(await store.resolve(name)),
    };
  }

  // ---- notification (used by host/notify; connector-notify.ts)

  notifiable(): Promise<Array<{ name: string; kind: string; fault: string | null }>> {
    return notifiable(this.#store);
  }

  canNotify(kind: string): boolean {
    return canNotify(this.kinds, kind);
  }

  notify(name: string, message: NotifyMessage): Promise<{ ok: boolean; problem: string | null; kind: string | null }> {
    return notifyWith({ store: this.#store, log: this.#log }, name, message);
  }

  // ---- actions (plugin API 1.2; used by the acting area only; connector-actions.ts)

  /** The configured connectors whose kind declares actions, with each declaration and what stops it being used. */
  actionKinds(): Promise<ActionableConnector[]> {
    return actionable(this.#store);
  }

  /** Asks the connector what `act` would do, changing nothing. Never throws: a failure is the report. */
  rehearse(name: string, request: ActionRequest): Promise<ActionReport> {
    return actionWith({ store: this.#store, log: this.#log }, 'rehearse', name, request);
  }

  /** Performs the action on the outside system: the one call that changes it. Never throws. */
  act(name: string, request: ActionRequest): Promise<ActionReport> {
    return actionWith({ store: this.#store, log: this.#log }, 'act', name, request);
  }

  /** Reverses an action `act` performed, given what it answered in `undo`. Never throws. */
  undo(name: string, request: UndoRequest): Promise<ActionReport> {
    return actionWith({ store: this.#store, log: this.#log }, 'undo', name, request);
  }
}

function secretsIn(r: Resolved): string[] {
  return r.type === null || r.settings === null ? [] : secretValues(r.type, r.settings);
}
