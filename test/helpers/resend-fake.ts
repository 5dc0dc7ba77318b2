import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { ExecutionContext } from 'ava';

export interface FakeDomain {
  name: string;
  /** Resend's statuses: verified, not_started, pending, failed, temporary_failure. */
  status: string;
}

export interface FakeEmail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  id: string;
}

export interface ResendFake {
  /** Base address: give it as SERVICE_MAIL_API_URL. */
  url: string;
  /** The only API key the fake accepts (as `Authorization: Bearer <key>`). */
  key: string;
  domains: FakeDomain[];
  /** Every message accepted by POST /emails, in order. */
  sent: FakeEmail[];
  /** Every request's method and path, in order. */
  requests: Array<{ method: string; path: string; authorization: string | null }>;
  /** Makes the next requests fail with this HTTP status and message (null: work again). */
  fail(failure: { status: number; message: string } | null): void;
  close(): Promise<void>;
}

/**
 * A local stand-in for the Resend HTTP API: `GET /domains` → `{data: [{name, status}]}`,
 * `POST /emails` `{from, to, subject, text}` → `{id}`; checks the bearer key; records what
 * it was sent; can be told to fail. With `t`, closed after the test.
 */
export async function startResendFake(t?: ExecutionContext, opts: { key?: string; domains?: FakeDomain[] } = {}): Promise<ResendFake> {
  const key = opts.key ?? 're_test_key_0123456789';
  const domains: FakeDomain[] = opts.domains ?? [
    { name: 'bank.example', status: 'verified' },
    { name: 'unverified.example', status: 'not_started' },
  ];
  const sent: FakeEmail[] = [];
  const requests: ResendFake['requests'] = [];
  let failure: { status: number; message: string } | null = null;

  const answer = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    const authorization = req.headers.authorization ?? null;
    requests.push({ method: req.method ?? '', path, authorization });
    if (failure !== null) return answer(res, failure.status, { statusCode: failure.status, name: 'application_error', message: failure.message });
    if (authorization !== `Bearer ${key}`) return answer(res, 401, { statusCode: 401, name: 'validation_error', message: 'API key is invalid' });
    if (req.method === 'GET' && path === '/domains') {
      return answer(res, 200, {
        data: domains.map((d, i) => ({ id: `dom_${i}`, name: d.name, status: d.status, created_at: '2026-01-01T00:00:00.000Z', region: 'us-east-1' })),
      });
    }
    if (req.method === 'POST' && path === '/emails') {
      let body: { from?: unknown; to?: unknown; subject?: unknown; text?: unknown };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
      } catch {
        return answer(res, 400, { statusCode: 400, name: 'validation_error', message: 'body is not JSON' });
      }
      const to = typeof body.to === 'string' ? [body.to] : Array.isArray(body.to) ? body.to.filter((x): x is string => typeof x === 'string') : [];
      if (typeof body.from !== 'string' || to.length === 0 || typeof body.subject !== 'string') {
        return answer(res, 422, { statusCode: 422, name: 'validation_error', message: 'from, to and subject are required' });
      }
      const fromDomain =
        body.from
          .replace(/^.*<|>$/g, '')
          .split('@')[1]
          ?.toLowerCase() ?? '';
      const verified = domains.some((d) => d.status === 'verified' && (fromDomain === d.name || fromDomain.endsWith(`.${d.name}`)));
      if (!verified && fromDomain !== 'resend.dev') {
        return answer(res, 403, { statusCode: 403, name: 'validation_error', message: `The ${fromDomain} domain is not verified.` });
      }
      const id = `email_${sent.length + 1}`;
      sent.push({ from: body.from, to, subject: body.subject, text: typeof body.text === 'string' ? body.text : '', id });
      return answer(res, 200, { id });
    }
    return answer(res, 404, { statusCode: 404, name: 'not_found', message: 'not found' });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => answer(res, 500, { statusCode: 500, name: 'internal_server_error', message: 'fake failed' }));
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  t?.teardown(close);
  return {
    url: `http://127.0.0.1:${port}`,
    key,
    domains,
    sent,
    requests,
    fail: (f) => {
      failure = f;
    },
    close,
  };
}
