// A real host process whose clock the test moves: `node test/helpers/clocked-host.ts`, started
// by test/helpers/install-process.ts with an IPC channel. The service is built exactly as
// host/main.ts builds it (the environment read once, the whole app, one port), except that its
// clock is injected and stands still until the test sets it, and its tick runs when the test
// says (`{op: "tick"}`), so time rules are tested on the injected clock, never by sleeping.
// Test-only: the service's own entry point has no way to move its clock.
import '../../host/runtime-guard.ts';
import { createApp } from '../../host/app.ts';
import { TestClock } from '../../host/clock.ts';
import { loadConfig } from '../../host/config.ts';
import { createLogger } from '../../host/log.ts';

const config = loadConfig();
const clock = new TestClock(process.env.TEST_CLOCK_AT ?? '2026-06-01T08:00:00.000Z');
const app = await createApp(config, { clock, log: createLogger(config), manualTick: true });
const port = await app.listen();
process.stdout.write(`Console and API on http://localhost:${port}\n`);

type Message = { id: number; op: 'set'; at: string } | { id: number; op: 'tick' };

process.on('message', (m: Message) => {
  void (async () => {
    try {
      if (m.op === 'set') clock.set(m.at);
      else {
        await app.tick();
        // The tick starts the keychain's round in the background: the test waits for it.
        await app.keychain.idle();
      }
      process.send?.({ id: m.id, ok: true });
    } catch (e) {
      process.send?.({ id: m.id, ok: false, error: (e as Error).message });
    }
  })();
});

process.once('SIGTERM', () => {
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
