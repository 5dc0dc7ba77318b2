import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import type { SmtpSecurity } from './mail-settings.repo.ts';

/** Connection and greeting limits: a dead or silent server never holds a request for long. */
export const SMTP_CONNECT_TIMEOUT_MS = 15_000;
export const SMTP_GREETING_TIMEOUT_MS = 15_000;
export const SMTP_SOCKET_TIMEOUT_MS = 30_000;

export interface SmtpServer {
  host: string;
  port: number;
  security: SmtpSecurity;
  user: string | null;
  password: string | null;
  /** File of extra trusted CA certificates (PEM), added to the system ones; null: none. */
  caFile: string | null;
}

export interface Message {
  from: string;
  to: string;
  subject: string;
  text: string;
}

export type Outcome = { ok: true } | { ok: false; reason: string };

/**
 * Sends one message over SMTP with nodemailer: `starttls` demands STARTTLS (requireTLS),
 * `ssl` speaks TLS from the first byte (secure), `none` sends in the clear (ignoreTLS).
 * Certificates are always verified. Never throws; says why a message was not sent:
 * `refused: ...` when the server answered no, `unreachable: ...` when it could not be talked to.
 */
export async function sendSmtp(server: SmtpServer, message: Message): Promise<Outcome> {
  let ca: string[] | undefined;
  if (server.caFile !== null) {
    try {
      ca = [...rootCertificates, readFileSync(server.caFile, 'utf8')];
    } catch (e) {
      return { ok: false, reason: `unreachable: cannot read the CA file (SERVICE_MAIL_CA_FILE): ${(e as NodeJS.ErrnoException).code ?? 'error'}` };
    }
  }
  // Loaded on the first message, not at start: a service that sends no mail never holds nodemailer.
  const { createTransport } = await import('nodemailer');
  const transport = createTransport({
    host: server.host,
    port: server.port,
    secure: server.security === 'ssl',
    requireTLS: server.security === 'starttls',
    ignoreTLS: server.security === 'none',
    auth: server.user === null || server.user === '' ? undefined : { user: server.user, pass: server.password ?? '' },
    tls: { rejectUnauthorized: true, ...(ca === undefined ? {} : { ca }) },
    connectionTimeout: SMTP_CONNECT_TIMEOUT_MS,
    greetingTimeout: SMTP_GREETING_TIMEOUT_MS,
    socketTimeout: SMTP_SOCKET_TIMEOUT_MS,
    disableFileAccess: true,
    disableUrlAccess: true,
    logger: false,
    debug: false,
  });
  try {
    await transport.sendMail({ from: message.from, to: message.to, subject: message.subject, text: message.text });
    return { ok: true };
  } catch (e) {
    return { ok: false, reason: describeSmtpError(e) };
  } finally {
    transport.close();
  }
}

function describeSmtpError(e: unknown): string {
  const err = (e ?? {}) as { code?: unknown; responseCode?: unknown; response?: unknown; message?: unknown };
  const code = typeof err.code === 'string' ? err.code : null;
  let message = typeof err.message === 'string' ? err.message : String(e);
  // Node's hint about --use-system-ca does not apply here: the service's own setting does.
  message = message.replace(/;? *if the root CA is installed locally.*$/s, ' (a private CA is trusted with SERVICE_MAIL_CA_FILE)');
  if (typeof err.responseCode === 'number') {
    const what = code === 'EAUTH' ? 'authentication failed' : code === 'EENVELOPE' ? 'sender or recipient refused' : 'the server said no';
    const said = typeof err.response === 'string' ? err.response : message;
    return `refused: ${what}: ${said}`;
  }
  if (code === 'EAUTH') return `refused: authentication failed: ${message}`;
  if (code === 'EENVELOPE') return `refused: ${message}`;
  if (code === 'ETIMEDOUT') return `unreachable: timed out: ${message}`;
  return `unreachable: ${message}`;
}
