import type {
  ConnectorContext,
  ConnectorFindings,
  ConnectorPluginWithCapabilities,
  ConnectorTestResult,
  NotifyMessage,
  NotifyResult,
} from '../../../host/plugins/contract.ts';
import { createHmac } from 'node:crypto';

/**
 * A generic JSON webhook as a notification target. `notify` POSTs the host's message as is
 * (`{event, episode, sent_at}`) with `X-Oncall-Signature: sha256=<hex HMAC-SHA256 of the exact
 * body bytes with the secret>`; `test` only checks that the URL answers (a HEAD), so checking
 * the connector never posts into a chat room. See README.md.
 */

interface Settings {
  url: string;
  secret: string;
  timeout_s?: number;
}

const DEFAULT_TIMEOUT_S = 10;

/** `sha256=<hex HMAC-SHA256 of body with secret>`: the X-Oncall-Signature header's value. */
export function signature(body: string | Buffer, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

const plugin: ConnectorPluginWithCapabilities = {
  async test(ctx: ConnectorContext): Promise<ConnectorTestResult & ConnectorFindings> {
    const s = ctx.settings as unknown as Settings;
    // Whether the address answers at all (any status below 500): a HEAD, never a message.
    const r = await ctx.http.request({ method: 'HEAD', url: s.url, timeoutS: s.timeout_s ?? DEFAULT_TIMEOUT_S, shown: 'origin' });
    if (!r.ok) return { ok: false, problem: r.problem };
    if (r.status >= 500) return { ok: false, problem: `${r.where} answered HTTP ${r.status}` };
    return { ok: true, problem: null, found: { origin: new URL(s.url).origin, head_status: r.status } };
  },

  async notify(ctx: ConnectorContext, message: NotifyMessage): Promise<NotifyResult> {
    const s = ctx.settings as unknown as Settings;
    const body = JSON.stringify({ event: message.event, episode: message.episode, sent_at: message.sent_at });
    const r = await ctx.http.request({
      method: 'POST',
      url: s.url,
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'oncall-webhook/1.0',
        'x-oncall-event': message.event,
        'x-oncall-signature': signature(body, s.secret),
      },
      timeoutS: s.timeout_s ?? DEFAULT_TIMEOUT_S,
      maxBodyBytes: 2000,
      shown: 'origin',
    });
    if (!r.ok) return { ok: false, problem: r.problem };
    if (r.status >= 200 && r.status < 300) return { ok: true, problem: null };
    if (r.status >= 300 && r.status < 400) return { ok: false, problem: `${r.where} redirects (HTTP ${r.status}); point url at the final address` };
    if (r.status === 401 || r.status === 403) return { ok: false, problem: `${r.where} refused the message (HTTP ${r.status}): check the secret or key` };
    return { ok: false, problem: `${r.where} answered HTTP ${r.status}` };
  },
};

export default plugin;
