import type { ServerResponse } from 'node:http';
import type { Server } from 'restify';
import { onEveryRequest } from './http/connections.ts';
import type { Logger } from './log.ts';

export interface CloseOptions {
  /** Milliseconds from now by which the shutdown ends, having given back every lease it could. */
  deadlineMs?: number;
}

/** What the shutdown stops, waits for and gives back; `host/app.ts` wires it from the areas. */
export interface ShutdownDeps {
  server: Server;
  log: Logger;
  /** GET /health/ready answers 503 `shutting_down` from the first step on. */
  readiness: { markShuttingDown(): void };
  /** Ends the real-time tick. */
  stopTicking(): void;
  tls: { stop(): void } | null;
  /** Tells every background worker at once to stop between its batches; each is then waited for. */
  stopWorkers(): Array<Promise<unknown>>;
  /** Once no request comes in, before the workers are waited for (a running study ends as failed). */
  beforeWorkers(): Promise<unknown>;
  /** Waited for in turn after the workers (mail being sent, sign-ins, syncs, keychain rounds). */
  idle: ReadonlyArray<() => Promise<unknown>>;
  /**
   * What gives back the claims and leases of this process, or with `everyHolder` of any process
   * (the start of the only host on SQLite), each answering how many it gave back.
   */
  releases: ReadonlyArray<[string, (everyHolder: boolean) => Promise<number>]>;
  /** The checkpoints the last commits made due written, then the ledger's own connections ended. */
  closeLedger(): Promise<void>;
  closeDb(): Promise<void>;
  releasePidFile(): void;
}

export interface Shutdown {
  /** The whole shutdown, once (a second call answers the first's promise). */
  close(opts: CloseOptions): Promise<void>;
  /** Every lease and claim of this process given back (or, `everyHolder`, of any process). */
  releaseAll(everyHolder?: boolean): Promise<void>;
}

/**
 * The shutdown (docs/operations.md, "Shutdown"): not ready, no new requests, idle connections
 * closed, background work stopped between batches, in-flight requests and commits finished,
 * every lease and claim given back. With `deadlineMs`, whatever is still waited for then (a
 * hanging relay, a slow connector, a client that keeps its request open) is given up: the leases
 * are given back all the same and the database is closed. From the shutdown on, every response
 * (those in flight too) closes its connection after it.
 */
export function createShutdown(d: ShutdownDeps): Shutdown {
  const { server, log } = d;
  let shuttingDown = false;
  const answering = new Set<ServerResponse>();
  onEveryRequest(
    server.server,
    (_req, res) => {
      if (shuttingDown) res.shouldKeepAlive = false;
      answering.add(res);
      res.once('close', () => answering.delete(res));
    },
    true,
  );
  const closeAfterAnswers = () => {
    for (const res of answering) if (!res.headersSent) res.shouldKeepAlive = false;
  };

  /** Waits for the server to stop: no new connection, idle ones closed at once, in-flight requests answered. */
  const stopServing = async (): Promise<void> => {
    if (!server.server.listening) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // A keep-alive connection becomes idle when its request is answered: closed as soon as it is.
    const sweep = setInterval(() => server.server.closeIdleConnections(), 50);
    server.server.closeIdleConnections();
    await closed.finally(() => clearInterval(sweep));
  };

  const releaseAll = async (everyHolder = false): Promise<void> => {
    for (const [what, step] of d.releases) {
      const released = await step(everyHolder).catch((err: unknown) => (log.warn({ err, what }, 'could not give back leases'), 0));
      if (released > 0) log.info({ what, released, every_holder: everyHolder }, 'leases given back');
    }
  };

  let closing: Promise<void> | null = null;
  const close = (opts: CloseOptions): Promise<void> =>
    (closing ??= (async () => {
      const startedMs = Date.now();
      const left = () => (opts.deadlineMs === undefined ? Infinity : startedMs + opts.deadlineMs - Date.now());
      /** `p`, or nothing once `reserveMs` before the deadline is reached; answers whether `p` finished. */
      const within = async (p: Promise<unknown>, reserveMs: number): Promise<boolean> => {
        if (left() === Infinity) return (await p, true);
        let t: NodeJS.Timeout | undefined;
        const late = new Promise<false>((resolve) => (t = setTimeout(() => resolve(false), Math.max(0, left() - reserveMs))));
        const done = p.then(
          () => true,
          () => true,
        );
        try {
          return await Promise.race([done, late]);
        } finally {
          clearTimeout(t);
        }
      };
      shuttingDown = true;
      closeAfterAnswers();
      d.readiness.markShuttingDown();
      d.stopTicking();
      d.tls?.stop();
      // Every worker is told at once to stop between its batches; then each is waited for in turn.
      const workers = d.stopWorkers();
      const drain = (async () => {
        await stopServing();
        await d.beforeWorkers();
        await Promise.allSettled(workers);
        for (const idle of d.idle) await idle();
      })();
      // What is still running 2 s before the deadline is left: its claims are given back below.
      const drained = await within(drain, 2_000);
      if (!drained) {
        log.warn({ waited_ms: Date.now() - startedMs }, 'shutdown deadline: giving up on work still running');
        server.server.closeAllConnections();
      }
      await within(releaseAll(), 1_000);
      // Checkpoints the last commits made due are written before the database goes.
      await within(d.closeLedger(), 500);
      await within(d.closeDb(), 100);
      d.releasePidFile();
    })());

  return { close, releaseAll };
}
