// First, so that a too-old Node.js says so before anything else of the host is loaded.
import './runtime-guard.ts';
import { createApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { deliverAdminToken } from './first-start.ts';
import { createLogger } from './log.ts';
import { startupProblem } from './startup-problem.ts';
import { releaseStartupGarbage } from './startup-memory.ts';

/** By then the shutdown has given back every lease it could and closed the database. */
const SHUTDOWN_DEADLINE_MS = 8_500;
/** By then the process has exited, whatever still hangs. */
const EXIT_DEADLINE_MS = 9_500;

/** `npm start`: read the environment once, build the service, serve until told to stop. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`Cannot start: ${e.problems.join('\n  ')}\n`);
    process.exit(2);
  }
  const log = createLogger(config);
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'));

  // A full disk, an unreachable database, a schema of a newer version, a port in use: one line
  // saying so, no stack trace (host/startup-problem.ts); anything else is a bug and keeps it.
  const problem = (e: unknown): never => {
    const line = startupProblem(e, config);
    if (line === null) throw e;
    process.stderr.write(`Cannot start: ${line}\n`);
    process.exit(1);
  };
  const app = await createApp(config, { log }).catch(problem);
  if (app.adminTokenToPrint !== null) {
    // The one deliberate exception to "no token in output": on a terminal only, never through
    // the logger; otherwise a 0600 file the log names. Only its hash is kept.
    deliverAdminToken(app.adminTokenToPrint, { terminal: process.stdout.isTTY === true, dataDir: config.dataDir, write: (s) => process.stdout.write(s), log });
  }
  const port = await app.listen().catch(async (e: unknown) => {
    await app.close().catch(() => undefined);
    return problem(e);
  });
  // SIGTERM/SIGINT: the shutdown gives back every lease by SHUTDOWN_DEADLINE_MS whatever clients,
  // relays or connectors do; should even that hang (a frozen database), the process still exits
  // by EXIT_DEADLINE_MS (docs/operations.md, "Shutdown"; systemd's TimeoutStopSec is above it).
  const stop = (signal: string) => {
    log.info({ signal }, 'stopping');
    setTimeout(() => {
      log.error({ signal }, 'the shutdown did not end in time: exiting');
      process.exit(1);
    }, EXIT_DEADLINE_MS).unref();
    app.close({ deadlineMs: SHUTDOWN_DEADLINE_MS }).then(
      () => {
        log.info({ signal }, 'stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'the shutdown failed');
        process.exit(1);
      },
    );
  };
  // Before the line below says the service is up: whoever waits for that line (a supervisor, a
  // script, a test) may stop it at once, and a signal that came before the handlers would end the
  // process without its shutdown (it did, under load, between the line and the handlers).
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));

  log.info({ port, fingerprint: app.identity.fingerprint, database: config.databaseUrl === null ? 'sqlite' : 'mysql' }, 'serving');
  releaseStartupGarbage();
  process.stdout.write(`Console and API on ${config.tls === null ? 'http' : 'https'}://localhost:${port}\n`);
}

await main();
