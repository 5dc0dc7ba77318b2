/**
 * A service's TLS endpoint in the eval: an HTTPS server (in the harness) presenting a certificate
 * of the eval's CA, which a blackbox exporter probes for its certificate (job `blackbox-tls`). The
 * fault is real: the server starts presenting another certificate (`present`), as when a renewal
 * is rolled back or an old certificate is deployed, with no restart (`setSecureContext`).
 */
import { createServer, type Server } from 'node:https';
import type { Teardowns } from '../helpers/daemon.ts';
import type { TestCa } from '../helpers/certs.ts';
import { onFreePort } from './ports.ts';

export class TlsEndpoint {
  readonly name: string;
  readonly #ca: TestCa;
  readonly #server: Server;
  #port: number | null = null;

  constructor(t: Teardowns, name: string, ca: TestCa, daysLeft: number) {
    this.name = name;
    this.#ca = ca;
    const leaf = ca.leafIn(`${name}.bank.test`, daysLeft);
    this.#server = createServer({ key: leaf.key, cert: leaf.chain }, (_req, res) => res.end(`${name}\n`));
    t.teardown(() => new Promise<void>((resolve) => (this.#server.listening ? this.#server.close(() => resolve()) : resolve())));
  }

  /** `127.0.0.1:<port>`: what the blackbox exporter probes, and the probe's `instance`. */
  get target(): string {
    if (this.#port === null) throw new Error(`the TLS endpoint of ${this.name} has not started yet`);
    return `127.0.0.1:${this.#port}`;
  }

  async start(): Promise<void> {
    this.#port = await onFreePort(
      (port) =>
        new Promise<void>((resolve, reject) => {
          this.#server.once('error', reject);
          this.#server.listen(port, '127.0.0.1', () => {
            this.#server.off('error', reject);
            resolve();
          });
        }),
    );
  }

  /** From now on presents a new certificate with `daysLeft` days to its not-after (negative: expired). */
  present(daysLeft: number): void {
    const leaf = this.#ca.leafIn(`${this.name}.bank.test`, daysLeft);
    this.#server.setSecureContext({ key: leaf.key, cert: leaf.chain });
  }
}
