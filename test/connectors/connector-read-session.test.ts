// A read session (ConnectorService.session, used by each investigation's readers): a connector is
// looked up once for the session's life and used as it stood then; a new session sees a change.
import test from 'ava';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AdminPrincipal } from '../../host/identity/principal.ts';
import { actionHost } from '../helpers/connector-actions.ts';

const ADMIN: AdminPrincipal = { kind: 'admin_token', actor: 'admin-token', role: 'owner', email: null };

/** A Prometheus stand-in answering every instant query with one sample of value `value`. */
async function prometheus(t: import('ava').ExecutionContext, value: string): Promise<string> {
  const srv = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: [1_780_000_000, value] }] } }));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))));
  return `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
}

const valueOf = (r: { ok: boolean; value?: Record<string, unknown> }) =>
  JSON.stringify((r.value?.data as { result?: { value: unknown[] }[] } | undefined)?.result?.[0]?.value[1]);

test('a session reads each connector as it stood when first read; a new session reads the change', async (t) => {
  const [one, two] = [await prometheus(t, '1'), await prometheus(t, '2')];
  const { connectors } = await actionHost(t, {});
  await connectors.put('prom', { kind: 'prometheus', settings: { url: one } }, ADMIN);
  const session = connectors.session();
  const q = { query: 'up', at: '2026-06-01T00:00:00.000Z' };
  t.is(valueOf(await session.read('prom', 'query', q, 5000)), '"1"');
  t.deepEqual(
    (await session.readable('metrics')).map((c) => c.name),
    ['prom'],
  );

  await connectors.put('prom', { kind: 'prometheus', settings: { url: two } }, ADMIN);
  t.is(valueOf(await session.read('prom', 'query', q, 5000)), '"1"', 'the session keeps the connector it looked up');
  t.is(valueOf(await connectors.session().read('prom', 'query', q, 5000)), '"2"', 'a new session looks it up again');
  t.is(valueOf(await connectors.read('prom', 'query', q, 5000)), '"2"', 'a read outside a session always looks it up');
});
