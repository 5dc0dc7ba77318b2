import { readFileSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import type { Server as HttpsServer } from 'node:https';
import { createSecureContext } from 'node:tls';
import type { Logger } from '../log.ts';

/** The certificate (chain) and key as PEM. */
export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
}

/** The TLS files cannot be used: says which one and why, never what is in them. */
export class TlsFilesError extends Error {}

/** How often the two files are looked at for a change (a stat each). */
export const TLS_WATCH_MS = 2000;

/**
 * Reads SERVICE_TLS_CERT and SERVICE_TLS_KEY and checks that they make a working pair (PEM, the
 * key matching the certificate) by building the context Node would serve with.
 */
export function readTlsFiles(files: { certFile: string; keyFile: string }): TlsMaterial {
  const read = (file: string, name: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (e) {
      throw new TlsFilesError(`cannot read ${name} ${file} (${(e as NodeJS.ErrnoException).code ?? 'unreadable'})`);
    }
  };
  const material = { cert: read(files.certFile, 'SERVICE_TLS_CERT'), key: read(files.keyFile, 'SERVICE_TLS_KEY') };
  try {
    createSecureContext(material);
  } catch (e) {
    // OpenSSL's reason (no start line, key values mismatch, …) names no secret.
    const why = (e as { reason?: unknown; code?: unknown }).reason ?? (e as { code?: unknown }).code ?? 'not a PEM certificate and key';
    throw new TlsFilesError(`SERVICE_TLS_CERT ${files.certFile} and SERVICE_TLS_KEY ${files.keyFile} are not a usable pair: ${String(why)}`);
  }
  return material;
}

/**
 * Serves a renewed certificate without a restart: when either file changes (a renewal, a
 * symlink swapped), both are read again and, if they make a working pair, new connections get
 * them (`setSecureContext`); connections already open keep theirs. A half-finished renewal (the
 * new certificate beside the old key) is logged and skipped: the next change tries again.
 */
export class TlsReloader {
  readonly #files: { certFile: string; keyFile: string };
  readonly #server: HttpsServer;
  readonly #log: Logger;
  readonly #intervalMs: number;
  #watching = false;

  constructor(deps: { files: { certFile: string; keyFile: string }; server: HttpsServer; log: Logger; intervalMs?: number }) {
    this.#files = deps.files;
    this.#server = deps.server;
    this.#log = deps.log;
    this.#intervalMs = deps.intervalMs ?? TLS_WATCH_MS;
  }

  start(): void {
    if (this.#watching) return;
    this.#watching = true;
    for (const file of [this.#files.certFile, this.#files.keyFile]) watchFile(file, { interval: this.#intervalMs, persistent: false }, this.#changed);
  }

  stop(): void {
    if (!this.#watching) return;
    this.#watching = false;
    for (const file of [this.#files.certFile, this.#files.keyFile]) unwatchFile(file, this.#changed);
  }

  /** Reads both files again; true when the new pair is now served. */
  reload(): boolean {
    try {
      this.#server.setSecureContext(readTlsFiles(this.#files));
      this.#log.info({ tls: { cert: this.#files.certFile } }, 'TLS certificate reloaded');
      return true;
    } catch (e) {
      this.#log.warn(
        { tls: { problem: e instanceof Error ? e.message : String(e) } },
        'TLS files changed but cannot be used yet; still serving the previous certificate',
      );
      return false;
    }
  }

  readonly #changed = (now: Stats, before: Stats): void => {
    if (now.mtimeMs === before.mtimeMs && now.ino === before.ino && now.size === before.size) return;
    this.reload();
  };
}
