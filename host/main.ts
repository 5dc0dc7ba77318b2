// First, so that a too-old Node.js says so before anything else of the host is loaded.
import './runtime-guard.ts';
import { createApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createLogger } from './log.ts';

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

  const app = await createApp(config, { log });
  if (app.adminTokenToPrint !== null) {
    // The one deliberate exception to "no token in output": printed once, straight to the
    // terminal, never through the logger; only its hash is kept.
    process.stdout.write(
      `\n  Admin token (shown once, keep it safe; only its hash is stored):\n\n    ${app.adminTokenToPrint}\n\n` +
        `  Set SERVICE_ADMIN_TOKEN to choose your own instead.\n\n`,
    );
  }
  const port = await app.listen();
  log.info({ port, fingerprint: app.identity.fingerprint, database: config.databaseUrl === null ? 'sqlite' : 'mysql' }, 'serving');
  process.stdout.write(`Console and API on http://localhost:${port}\n`);

  const stop = (signal: string) => {
    log.info({ signal }, 'stopping');
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

await main();
