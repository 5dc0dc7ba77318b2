import type { IncomingMessage } from 'node:http';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Transform } from 'node:stream';
import type { Request, Response } from 'restify';
import { AppError } from '../errors.ts';
import { checkJsonValue } from '../json-limits.ts';

/** Bodies are refused past 1 MiB, counted on the wire and again after decompression. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** A body must arrive whole within this long (real time: a socket read, not a rule). */
export const BODY_TIMEOUT_MS = 30_000;

const DECODERS: Record<string, () => Transform> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

const READ = Symbol('body read');
/** Stateless between calls (each `decode` without `stream` starts afresh), so one serves every request. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });
type Tracked = Request & { [READ]?: Promise<unknown> };

export interface BodyOptions {
  maxBytes?: number;
  timeoutMs?: number;
}

/**
 * The request's JSON body, read only when a route asks for it, which every route does after
 * its authorisation check: a caller that is not allowed in never has its body read. Read once
 * per request (later calls get the same value). `undefined` for an empty body.
 *
 * Refused: a declared or counted size past 1 MiB, before or after decompression (413); an
 * encoding other than identity, gzip, deflate or br (415); a broken compressed stream, bytes
 * that are not UTF-8, ill-formed Unicode, nesting past 32 levels or a `__proto__` key (400);
 * a body that does not arrive in time (408). The stream's errors never escape this function.
 */
export function readJson(req: Request, opts: BodyOptions = {}): Promise<unknown> {
  const r = req as Tracked;
  r[READ] ??= readRaw(req, opts).then(parse);
  return r[READ];
}

/** The body, or `{}` when the request has none (routes whose every field is optional). A
 * body that is present must still be an object: `null`, a number or an array is refused by
 * the route's validator, not taken for "nothing". */
export async function readBodyOrEmpty(req: Request, opts: BodyOptions = {}): Promise<unknown> {
  const body = await readJson(req, opts);
  return body === undefined ? {} : body;
}

/** True when the request may carry a body that nobody read: the connection is then closed after the answer, not drained. */
export function unreadBody(req: Request): boolean {
  if ((req as Tracked)[READ] !== undefined) return false;
  const len = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (len !== undefined && len !== '0');
}

/** Marks the answer so that Node closes the socket instead of reading an unread body to its end. */
export function closeIfUnread(req: Request, res: Response): void {
  if (unreadBody(req) && !res.headersSent) res.setHeader('Connection', 'close');
}

function parse(text: string): unknown {
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AppError('invalid_json', 'the body is not valid JSON');
  }
  checkJsonValue(value, 'body');
  return value;
}

function readRaw(req: IncomingMessage, opts: BodyOptions): Promise<string> {
  const max = opts.maxBytes ?? MAX_BODY_BYTES;
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > max) return Promise.reject(tooLarge(max));
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  const makeDecoder = encoding === 'identity' || encoding === '' ? null : DECODERS[encoding];
  if (makeDecoder === undefined) {
    return Promise.reject(new AppError('unsupported_media_type', 'Content-Encoding must be gzip, deflate, br or none'));
  }
  // A route that awaited I/O before asking (a session looked up, say) usually finds the body
  // whole in the request's buffer: it is taken at once, with the same limits and answers, and
  // without the timer and listeners that waiting for the rest of a body needs. (A route that
  // asks at once, as intake does, is answered before Node has parsed the body: it waits.)
  if (makeDecoder === null && req.complete && req.readableFlowing !== true) return readComplete(req, max);

  return new Promise<string>((resolve, reject) => {
    const decoder = makeDecoder === null ? null : makeDecoder();
    const chunks: Buffer[] = [];
    let wire = 0;
    let decoded = 0;
    let settled = false;
    const finish = (err: AppError | null, text?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.off('data', onWire);
      req.off('end', onWireEnd);
      req.off('error', onWireError);
      req.off('aborted', onAborted);
      req.off('close', onClose);
      if (decoder !== null) {
        decoder.removeAllListeners('data');
        decoder.removeAllListeners('end');
        // A late error from a decoder we gave up on must not be unhandled.
        decoder.on('error', () => {});
        decoder.destroy();
      }
      if (err !== null) {
        // Stop reading; whatever else the client sends is not buffered.
        req.pause();
        reject(err);
      } else resolve(text!);
    };
    const timer = setTimeout(() => finish(new AppError('request_timeout', 'the body did not arrive in time')), opts.timeoutMs ?? BODY_TIMEOUT_MS);
    timer.unref();

    const onDecoded = (chunk: Buffer) => {
      decoded += chunk.length;
      if (decoded > max) return finish(tooLarge(max));
      chunks.push(chunk);
    };
    const onDecodedEnd = () => {
      try {
        finish(null, utf8(chunks));
      } catch (e) {
        finish(e as AppError);
      }
    };
    const onWire = (chunk: Buffer) => {
      wire += chunk.length;
      if (wire > max) return finish(tooLarge(max));
      if (decoder === null) onDecoded(chunk);
      else decoder.write(chunk);
    };
    const onWireEnd = () => {
      if (decoder === null) onDecodedEnd();
      else decoder.end();
    };
    const onWireError = () => finish(new AppError('invalid_body', 'the body could not be read'));
    const onAborted = () => finish(new AppError('invalid_body', 'the body ended early'));
    const onClose = () => {
      if (!req.complete) onAborted();
    };

    if (decoder !== null) {
      decoder.on('data', onDecoded);
      decoder.on('end', onDecodedEnd);
      decoder.on('error', () => finish(new AppError('invalid_body', `the body is not valid ${encoding}`)));
    }
    req.on('data', onWire);
    req.on('end', onWireEnd);
    req.on('error', onWireError);
    req.on('aborted', onAborted);
    req.on('close', onClose);
    req.resume();
  });
}

/** The body already received whole (`req.complete`), uncompressed: read from the request's buffer. */
function readComplete(req: IncomingMessage, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for (let chunk = req.read() as Buffer | null; chunk !== null; chunk = req.read() as Buffer | null) {
    size += chunk.length;
    if (size > max) return Promise.reject(tooLarge(max));
    chunks.push(chunk);
  }
  try {
    return Promise.resolve(utf8(chunks));
  } catch (e) {
    return Promise.reject(e as AppError);
  }
}

/** The chunks as text; 400 `invalid_body` when they are not UTF-8. */
function utf8(chunks: Buffer[]): string {
  try {
    return UTF8.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
  } catch {
    throw new AppError('invalid_body', 'the body is not valid UTF-8');
  }
}

function tooLarge(max: number): AppError {
  return new AppError('payload_too_large', `the body must be at most ${max} bytes, before and after decompression`);
}
