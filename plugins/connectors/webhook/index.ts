import type { ConnectorContext, ConnectorFindings, ConnectorPluginWithCapabilities, ConnectorTestResult, NotifyMessage, NotifyResult } from '../../../host/plugins/contract.ts';
import { postJson, reachable, signature } from '../signed-post.ts';

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

const plugin: ConnectorPluginWithCapabilities = {
  async test(ctx: ConnectorContext): Promise<ConnectorTestResult & ConnectorFindings> {
    const s = ctx.settings as unknown as Settings;
    const r = await reachable(ctx, s.url, s.timeout_s ?? DEFAULT_TIMEOUT_S);
    if (!r.ok) return { ok: false, problem: r.problem };
    return { ok: true, problem: null, found: { origin: new URL(s.url).origin, head_status: r.status } };
  },

  async notify(ctx: ConnectorContext, message: NotifyMessage): Promise<NotifyResult> {
    const s = ctx.settings as unknown as Settings;
    const body = JSON.stringify({ event: message.event, episode: message.episode, sent_at: message.sent_at });
    const r = await postJson(ctx, s.url, body, { 'user-agent': 'oncall-webhook/1.0', 'x-oncall-event': message.event, 'x-oncall-signature': signature(body, s.secret) }, s.timeout_s ?? DEFAULT_TIMEOUT_S);
    return r.ok ? { ok: true, problem: null } : { ok: false, problem: r.problem };
  },
};

export default plugin;
