import { createHmac } from 'node:crypto';
import test from 'ava';
import { incidentMail } from '../../host/notify/message.ts';
import type { NotifyMessage } from '../../host/plugins/contract.ts';
import { eventBody } from '../../plugins/connectors/pagerduty/index.ts';
import { signature } from '../../plugins/connectors/webhook/index.ts';

const message = (over: Partial<NotifyMessage['episode']> = {}, event: NotifyMessage['event'] = 'incident.opened'): NotifyMessage => ({
  event,
  episode: {
    id: 'ep-1',
    service: 'checkout',
    severity: 'critical',
    t_open: '2026-11-24T10:00:00.000Z',
    alerts: ['HighErrorRate'],
    outcome: null,
    url: null,
    ...over,
  },
  sent_at: '2026-11-24T10:00:01.000Z',
});

test('PagerDuty: each severity maps to its own level; the summary is bounded and names the escalation', (t) => {
  for (const s of ['critical', 'warning', 'info'] as const) t.is((eventBody('k', message({ severity: s })).payload as any).severity, s);
  const many = eventBody('k', message({ alerts: Array.from({ length: 300 }, (_, i) => `Alert${i}-${'x'.repeat(20)}`) }, 'incident.escalated'));
  const summary = (many.payload as any).summary as string;
  t.true(summary.length <= 1024);
  t.regex(summary, /and 295 more \(escalated\)$/);
  t.is(many.event_action, 'trigger');
  t.false('client_url' in eventBody('k', message()), 'no link without SERVICE_PUBLIC_URL');
});

test('PagerDuty: a close is a resolve carrying only the key and the dedup_key', (t) => {
  t.deepEqual(eventBody('k', message({}, 'incident.closed')), { routing_key: 'k', event_action: 'resolve', dedup_key: 'ep-1' });
});

test('the webhook signature is sha256= and the hex HMAC-SHA256 of the exact bytes; one changed byte changes it', (t) => {
  const body = JSON.stringify(message());
  t.is(signature(body, 'the-secret-0123456789'), `sha256=${createHmac('sha256', 'the-secret-0123456789').update(body).digest('hex')}`);
  t.not(signature(body, 'the-secret-0123456789'), signature(body.replace('checkout', 'checkouT'), 'the-secret-0123456789'));
});

test('the e-mail names the event, service, severity and alerts, and links the console only when it can', (t) => {
  const opened = incidentMail(message({ url: 'https://oncall.bank.example/episodes/ep-1' }));
  t.is(opened.subject, '[critical] Incident opened: checkout (HighErrorRate)');
  t.regex(opened.text, /Console: +https:\/\/oncall\.bank\.example\/episodes\/ep-1/);
  const closed = incidentMail(message({ severity: 'warning' }, 'incident.closed'));
  t.is(closed.subject, '[warning] Incident closed: checkout (HighErrorRate)');
  t.notRegex(closed.text, /Console:/);
  t.regex(closed.text, /None of its alerts fire any more/);
});
