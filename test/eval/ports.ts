// Loopback ports for the eval's processes. A port found free can be taken by someone else before
// the process binds it (other tests run on this machine), so starting on one is retried on another.
import { freePort } from '../helpers/wait.ts';

/** Ports this process handed out already: never handed out twice. */
const handed = new Set<number>();

async function newPort(): Promise<number> {
  for (;;) {
    const p = await freePort();
    if (!handed.has(p)) {
      handed.add(p);
      return p;
    }
  }
}

const TRIES = 5;

/** Runs `start` on a new port, again on another one (5 tries) while it fails because the port is taken; answers the port. */
export async function onFreePort(start: (port: number) => Promise<void>): Promise<number> {
  for (let i = 1; ; i++) {
    const port = await newPort();
    try {
      await start(port);
      return port;
    } catch (e) {
      if (i >= TRIES || !/EADDRINUSE|address already in use/i.test((e as Error).message)) throw e;
    }
  }
}
