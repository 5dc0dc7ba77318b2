import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/** One message the test server accepted. */
export interface ReceivedMail {
  /** Envelope sender and recipients (MAIL FROM / RCPT TO). */
  from: string;
  to: string[];
  subject: string;
  /** The plain-text body, decoded. */
  text: string;
  /** The message as received, headers and all. */
  raw: string;
  /** The user the client authenticated as, or null. */
  user: string | null;
}

/** How the server answers no: `auth` refuses every login (535), `rcpt` every recipient (550),
 * `data` every message (554); `hang` reads a message and never answers (a relay that hangs);
 * null accepts. */
export type Refusal = 'auth' | 'rcpt' | 'data' | 'hang' | null;

export interface TestSmtp {
  host: string;
  port: number;
  /** PEM of the self-signed certificate the server presents: trust it with SERVICE_MAIL_CA_FILE. */
  caFile: string;
  /** Credentials the server accepts (null: no authentication asked for). */
  user: string | null;
  password: string | null;
  /** Every accepted message, in order. */
  messages: ReceivedMail[];
  /** Messages read and left unanswered (`refuse('hang')`). */
  hung(): number;
  /** Makes the server refuse from now on (null: accept again). */
  refuse(how: Refusal): void;
  /** Resolves with message number `index` (0-based) once it has arrived. */
  message(index: number, timeoutMs?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

export interface SmtpOptions {
  /** Require this login (AUTH PLAIN/LOGIN, only after STARTTLS). Default: no authentication. */
  user?: string;
  password?: string;
  /** TLS from the first byte (for `smtp_security: ssl`) instead of STARTTLS. */
  secure?: boolean;
}

/** A self-signed certificate for localhost and 127.0.0.1, made with the openssl CLI. */
export function makeCertificate(): { dir: string; keyFile: string; certFile: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-smtp-'));
  const keyFile = path.join(dir, 'key.pem');
  const certFile = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-days',
      '2',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  );
  return { dir, keyFile, certFile };
}

/**
 * A real SMTP server on 127.0.0.1 (smtp-server) offering STARTTLS with a self-signed
 * certificate; messages are parsed with mailparser into `messages`. With `t`, it is closed
 * after the test.
 */
export async function startSmtp(t?: ExecutionContext, opts: SmtpOptions = {}): Promise<TestSmtp> {
  const cert = makeCertificate();
  const messages: ReceivedMail[] = [];
  const waiters: Array<() => void> = [];
  let refusal: Refusal = null;
  let hung = 0;
  const user = opts.user ?? null;
  const password = opts.password ?? null;

  const server = new SMTPServer({
    secure: opts.secure === true,
    key: readFileSync(cert.keyFile),
    cert: readFileSync(cert.certFile),
    authOptional: user === null,
    disabledCommands: user === null ? ['AUTH'] : [],
    logger: false,
    onAuth(auth, _session, callback) {
      if (refusal === 'auth' || auth.username !== user || auth.password !== password) {
        const err = Object.assign(new Error('Authentication refused by the test server'), { responseCode: 535 });
        callback(err);
        return;
      }
      callback(null, { user: auth.username });
    },
    onRcptTo(address, _session, callback) {
      if (refusal === 'rcpt') {
        callback(Object.assign(new Error(`Mailbox ${address.address} refused by the test server`), { responseCode: 550 }));
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (refusal === 'hang') {
          hung++;
          return;
        }
        if (refusal === 'data') {
          callback(Object.assign(new Error('Message refused by the test server'), { responseCode: 554 }));
          return;
        }
        const raw = Buffer.concat(chunks);
        simpleParser(raw)
          .then((parsed) => {
            messages.push({
              from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
              to: session.envelope.rcptTo.map((r) => r.address),
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
              raw: raw.toString('utf8'),
              user: typeof session.user === 'string' ? session.user : null,
            });
            for (const w of waiters.splice(0)) w();
            callback();
          })
          .catch((err: Error) => callback(err));
      });
    },
  });
  server.on('error', () => {
    /* a client that went away; nothing for the test to do */
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.server.address() as { port: number }).port));
  });

  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(cert.dir, { recursive: true, force: true });
  };
  t?.teardown(close);

  return {
    host: '127.0.0.1',
    port,
    caFile: cert.certFile,
    user,
    password,
    messages,
    hung: () => hung,
    refuse: (how) => {
      refusal = how;
    },
    message: (index, timeoutMs = 10_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no message #${index} within ${timeoutMs} ms`)), timeoutMs);
        const check = (): void => {
          const m = messages[index];
          if (m !== undefined) {
            clearTimeout(timer);
            resolve(m);
          } else waiters.push(check);
        };
        check();
      }),
    close,
  };
}

/** A loopback port nothing listens on (taken and released), for "unreachable" cases. */
export async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}
