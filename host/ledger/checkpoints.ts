import { appendFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { InstallIdentity } from '../install/identity.ts';
import type { Logger } from '../log.ts';
import { canonicalJson, type ChainHead } from './entry.ts';
import type { LedgerRepo } from './ledger.repo.ts';
import type { Checkpoint } from './ledger.model.ts';
import { isStorageFailure } from '../storage/failures.ts';
import type { Witness } from './witness.ts';

export const CHECKPOINT_EVERY_EVENTS = 1000;
export const CHECKPOINT_EVERY_MS = 60_000;
export const CHECKPOINT_FILE = 'ledger-checkpoints.jsonl';
/**
 * The most consecutive seqs verify accepts without a checkpoint, between two checkpoints or
 * after the last one (`checkpoint_missing` beyond it). The count rule checkpoints the head of
 * the first commit at least 1,000 events past the last checkpoint, and a commit carries at most
 * 1,000 events, so a running host leaves at most 1,999. A host that dies between a commit and
 * its checkpoint writes it when it starts again; when it does not come back, another host's next
 * commit (at most 1,000 more) does it: at most 2,999. Three intervals hold every healthy case.
 */
export const CHECKPOINT_MAX_GAP = 3 * CHECKPOINT_EVERY_EVENTS;
/** The message of the log line each checkpoint writes (docs/ledger.md: it is the copy that leaves the machine). */
export const CHECKPOINT_LOG_MESSAGE = 'ledger checkpoint';

/** A checkpoint as a line of the file: also names the key that signed it. */
export interface FileCheckpoint extends Checkpoint {
  key: string;
}

export function checkpointMessage(cp: Pick<Checkpoint, 'seq' | 'hash' | 'at'>): string {
  return `checkpoint:v1${canonicalJson({ at: cp.at, hash: cp.hash, seq: cp.seq })}`;
}

/**
 * Writes a signed `{seq, hash, at}` of the chain head to the database, logs it (info, so it
 * reaches the journal or syslog), appends it to a file in the data directory and sends it to
 * the witnesses the install configures (witness.ts), every 1,000 events or 60 s (whichever
 * first, and only when the head moved). Verify compares the chain
 * with the database and file copies, which catches a truncated or rewritten chain, and reports
 * a stretch without checkpoints (both copies removed); the logged copy lets an auditor check
 * the chain against a head that left the machine.
 */
export class Checkpointer {
  #last: { seq: number; atMs: number } | null = null;
  #chain: Promise<unknown> = Promise.resolve();
  readonly file: string;

  readonly #repo: LedgerRepo;
  readonly #identity: InstallIdentity;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #witness: Witness | null;
  /** Sends to the witnesses under way (awaited by `idle`). */
  readonly #sending = new Set<Promise<void>>();

  constructor(deps: { repo: LedgerRepo; identity: InstallIdentity; clock: Clock; dataDir: string; log: Logger; witness?: Witness }) {
    this.#repo = deps.repo;
    this.#identity = deps.identity;
    this.#clock = deps.clock;
    this.#log = deps.log;
    this.#witness = deps.witness === undefined || deps.witness.targets.length === 0 ? null : deps.witness;
    this.file = path.join(deps.dataDir, CHECKPOINT_FILE);
  }

  /** The newest checkpoint in the database with its signature and key, as witnesses and the digest e-mail carry it; null before the first. */
  async latestSigned(): Promise<FileCheckpoint | null> {
    const cp = await this.#repo.lastCheckpoint();
    return cp === null ? null : { seq: cp.seq, hash: cp.hash, at: cp.at, signature: cp.signature, key: this.#identity.fingerprint };
  }

  /** The tick and the start: the latest checkpoint to each witness that has not had it (a failed send, a restart). */
  async witnessLatest(): Promise<void> {
    if (this.#witness === null) return;
    await this.#track(this.#witness.retry(await this.latestSigned()));
  }

  #track(p: Promise<void>): Promise<void> {
    this.#sending.add(p);
    return p.finally(() => this.#sending.delete(p));
  }

  /** The newest checkpoint in the database, whichever host wrote it. */
  async latest(): Promise<Pick<Checkpoint, 'seq' | 'hash' | 'at'> | null> {
    let cp: Checkpoint | null;
    try {
      cp = await this.#repo.lastCheckpoint();
    } catch (e) {
      if (isStorageFailure(e)) throw new AppError('ledger_unavailable');
      throw e;
    }
    return cp === null ? null : { seq: cp.seq, hash: cp.hash, at: cp.at };
  }

  /** Resolves when every checkpoint asked for so far is written (or has failed), and sent to the witnesses. */
  async idle(): Promise<void> {
    await this.#chain;
    await Promise.all([...this.#sending]);
  }

  /**
   * Writes a checkpoint if one is due. `head` is the head a commit just made (no read needed);
   * without it the head is read from the database (the periodic tick, which also sees other
   * processes' appends). Calls run one after another, each judging "due" at its own time.
   */
  maybeWrite(head?: ChainHead): Promise<Checkpoint | null> {
    const run = this.#chain.then(() => this.#maybeWrite(head));
    this.#chain = run.catch(() => null);
    return run;
  }

  async #maybeWrite(known?: ChainHead): Promise<Checkpoint | null> {
    const now = this.#clock.now().getTime();
    if (this.#last === null) {
      const last = await this.#repo.lastCheckpoint();
      this.#last = last === null ? { seq: 0, atMs: now } : { seq: last.seq, atMs: new Date(last.at).getTime() };
    }
    const last = this.#last;
    const due = (h: ChainHead) => h.seq - last.seq >= CHECKPOINT_EVERY_EVENTS || (h.seq > last.seq && now - last.atMs >= CHECKPOINT_EVERY_MS);
    if (known !== undefined && !due(known)) return null;
    const head = known ?? (await this.#repo.head());
    if (!due(head)) return null;
    const at = new Date(now).toISOString();
    const cp: Checkpoint = { seq: head.seq, hash: head.hash, at, signature: this.#identity.sign(checkpointMessage({ seq: head.seq, hash: head.hash, at })) };
    await this.#repo.saveCheckpoint(cp);
    const line: FileCheckpoint = { ...cp, key: this.#identity.fingerprint };
    // Public data only: the signature verifies with the install's public key and proves nothing
    // about the private one.
    this.#log.info({ ledger_checkpoint: line }, CHECKPOINT_LOG_MESSAGE);
    await appendFile(this.file, JSON.stringify(line) + '\n', { mode: 0o600, flag: 'a' });
    this.#last = { seq: cp.seq, atMs: now };
    // Off the machine, in the background: a slow or failing witness never holds up the ledger.
    if (this.#witness !== null) void this.#track(this.#witness.send(line));
    return cp;
  }
}

/** The file's checkpoints; a missing file is none, an unreadable line is reported as such. */
export async function readCheckpointFile(file: string): Promise<{ checkpoints: FileCheckpoint[]; unreadable: number }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { checkpoints: [], unreadable: 0 };
    throw e;
  }
  const checkpoints: FileCheckpoint[] = [];
  let unreadable = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const v = JSON.parse(line) as FileCheckpoint;
      if (Number.isInteger(v.seq) && typeof v.hash === 'string' && typeof v.at === 'string' && typeof v.signature === 'string' && typeof v.key === 'string')
        checkpoints.push(v);
      else unreadable++;
    } catch {
      unreadable++;
    }
  }
  return { checkpoints, unreadable };
}
