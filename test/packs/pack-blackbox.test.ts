// The `blackbox` pack against Debian's real blackbox exporter and Prometheus: TLS servers of the
// test's own with certificates of a test CA (one that expired yesterday, one that expires in three
// days, one valid for ninety), a DNS server of its own (Debian's dnsmasq on a loopback port) whose
// records it changes, and a TCP server it stops; the exporter probes them, Prometheus scrapes the
// probes every second, and each cause runs as an investigation does (test/helpers/pack-live.ts).
import { createServer as createTcp, type Server, type Socket } from 'node:net';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { ExecutionContext } from 'ava';
import { blackboxMissing, dnsmasqMissing, startBlackbox, startDns } from '../helpers/blackbox.ts';
import { TestCa, type Leaf } from '../helpers/certs.ts';
import { testNeeding } from '../helpers/needs.ts';
import { check, rerun, service, untilPrometheus, workload } from '../helpers/pack-live.ts';
import { PROMETHEUS_BIN, startPrometheus } from '../helpers/prometheus.ts';
import { existsSync } from 'node:fs';

const prometheusMissing = existsSync(PROMETHEUS_BIN) ? null : `${PROMETHEUS_BIN} not found (apt-get install prometheus)`;
const needs = (...why: Array<string | null>) => why.find((w) => w !== null) ?? null;

const MODULES = `  tls_connect:
    prober: tcp
    timeout: 3s
    tcp:
      tls: true
      tls_config:
        insecure_skip_verify: true
  https_verify:
    prober: http
    timeout: 3s
    http:
      preferred_ip_protocol: ip4
  tcp_connect:
    prober: tcp
    timeout: 2s
  http_2xx:
    prober: http
    timeout: 2s
    http:
      preferred_ip_protocol: ip4
  dns_orders:
    prober: dns
    timeout: 2s
    dns:
      query_name: orders.bank.test
      query_type: A
      preferred_ip_protocol: ip4
`;

/** An HTTPS server presenting `leaf` and its chain, closed after the test: its `host:port`. */
async function tlsServer(t: ExecutionContext, leaf: Leaf): Promise<string> {
  const server = createHttps({ key: leaf.key, cert: leaf.chain }, (_req, res) => res.end('ok\n'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

testNeeding(
  needs(prometheusMissing, blackboxMissing),
  'blackbox/certificate-expiry: an expired certificate and one expiring in 3 days hold, naming subject, issuer and not-after; one valid for 90 days is ruled out',
  async (t) => {
    const ca = new TestCa(t);
    const leaves = { expired: ca.leafIn('expired.bank.test', -1), soon: ca.leafIn('soon.bank.test', 3), valid: ca.leafIn('valid.bank.test', 90) };
    const at = { expired: await tlsServer(t, leaves.expired), soon: await tlsServer(t, leaves.soon), valid: await tlsServer(t, leaves.valid) };
    const exporter = await startBlackbox(t, MODULES);
    const prom = await startPrometheus(t, {
      jobs: [
        { job: 'blackbox-tls', targets: Object.values(at), probe: { exporter, module: 'tls_connect' } },
        // A module that verifies the certificate: it fails on the expired one and reads no certificate.
        { job: 'blackbox-https', targets: [`https://${at.expired}/`], probe: { exporter, module: 'https_verify' } },
      ],
    });
    await untilPrometheus(prom.base, 'probe_ssl_earliest_cert_expiry', (s) => s.length === 3);
    await untilPrometheus(prom.base, 'probe_success{job="blackbox-https"}', (s) => s.length === 1);
    const linked = (target: string) => service('web', [workload(`job="blackbox-tls", instance="${target}"`)]);

    const expired = await check(prom.base, 'blackbox/certificate-expiry', linked(at.expired));
    t.is(expired.verdict, 'holds', expired.reason);
    const notAfter = leaves.expired.notAfter.toISOString();
    t.true(
      expired.reason.startsWith(
        `${at.expired} (job blackbox-tls): ${leaves.expired.subject}, issued by ${ca.issuer}, expired 1.0 days ago (not after ${notAfter})`,
      ),
      expired.reason,
    );
    t.like(expired.evidence[0], {
      observed: {
        threshold_days: 14,
        total: 1,
        expiring: 1,
        expired: 1,
        certificates: [{ labels: { subject: leaves.expired.subject, issuer: ca.issuer }, not_after: notAfter }],
      },
    });
    const again = await rerun(prom.base, expired.evidence[0]!.query, expired.evidence[0]!.at);
    t.deepEqual(
      again.map((s) => Number(s.value.toPrecision(6))),
      [(expired.evidence[0]!.observed as { certificates: Array<{ days_left: number }> }).certificates[0]!.days_left],
      'the evidence re-run at its moment gives the verdict its number',
    );

    const soon = await check(prom.base, 'blackbox/certificate-expiry', linked(at.soon));
    t.is(soon.verdict, 'holds', soon.reason);
    t.true(
      soon.reason.includes(`${leaves.soon.subject}, issued by ${ca.issuer}, expires in 3.0 days (not after ${leaves.soon.notAfter.toISOString()})`),
      soon.reason,
    );
    t.like(soon.evidence[0], { observed: { expiring: 1, expired: 0 } });
    // The estate sets a shorter notice for this service: 3 days left is then fine.
    const lenient = await check(prom.base, 'blackbox/certificate-expiry', linked(at.soon), { settings: { days: 2 } });
    t.is(lenient.verdict, 'ruled_out', lenient.reason);

    const valid = await check(prom.base, 'blackbox/certificate-expiry', linked(at.valid));
    t.is(valid.verdict, 'ruled_out', valid.reason);
    t.true(valid.reason.includes(`expires in 90.0 days`), valid.reason);

    // The verifying probe of the expired server never read a certificate: nothing to judge by.
    const verifying = await check(prom.base, 'blackbox/certificate-expiry', service('web', [workload('job="blackbox-https"')]));
    t.like(verifying, { verdict: 'unknown', obstacle: "the data isn't there" });
    // Found without a link: the probe of the service's health URL (its instance).
    const byUrl = await check(prom.base, 'blackbox/certificate-expiry', service('web', [], { health_url: at.soon }));
    t.is(byUrl.verdict, 'holds', byUrl.reason);
  },
);

testNeeding(
  needs(prometheusMissing, blackboxMissing, dnsmasqMissing),
  'blackbox/dns-resolution: ruled out while the DNS server answers and names resolve; holds on NXDOMAIN, on a server that does not answer, and on a probe whose target does not resolve',
  async (t) => {
    const dns = await startDns(t, { 'orders.bank.test': '127.0.0.7' });
    const exporter = await startBlackbox(t, MODULES);
    const prom = await startPrometheus(t, {
      jobs: [
        { job: 'blackbox-dns', targets: [dns.server], probe: { exporter, module: 'dns_orders' } },
        { job: 'blackbox', targets: ['http://orders.invalid/', `http://${exporter}/`], probe: { exporter, module: 'http_2xx' } },
      ],
    });
    await untilPrometheus(prom.base, 'probe_success{job="blackbox-dns"} == 1', (s) => s.length === 1);
    await untilPrometheus(prom.base, 'probe_ip_protocol{job="blackbox"}', (s) => s.length === 2);
    const orders = service('orders', [workload('job="blackbox-dns"')]);

    const answering = await check(prom.base, 'blackbox/dns-resolution', orders);
    t.is(answering.verdict, 'ruled_out', answering.reason);
    t.deepEqual(
      answering.evidence.map((e) => e.query),
      ['probe_success{job="blackbox-dns"} and probe_dns_query_succeeded{job="blackbox-dns"}', 'probe_ip_protocol{job="blackbox-dns"}'],
    );

    await dns.serve({});
    await untilPrometheus(prom.base, 'probe_success{job="blackbox-dns"} == 0', (s) => s.length === 1);
    const nxdomain = await check(prom.base, 'blackbox/dns-resolution', orders);
    t.is(nxdomain.verdict, 'holds', nxdomain.reason);
    t.true(nxdomain.reason.startsWith(`the DNS probes of ${dns.server} (job blackbox-dns) got no answer their module accepts`), nxdomain.reason);

    await dns.stop();
    await untilPrometheus(prom.base, 'probe_dns_query_succeeded{job="blackbox-dns"} == 0', (s) => s.length === 1);
    const silent = await check(prom.base, 'blackbox/dns-resolution', orders);
    t.is(silent.verdict, 'holds', silent.reason);

    // An HTTP probe whose target's name does not resolve, found by the service's health URL.
    const unresolved = await check(prom.base, 'blackbox/dns-resolution', service('portal', [], { health_url: 'http://orders.invalid/' }));
    t.is(unresolved.verdict, 'holds', unresolved.reason);
    t.true(unresolved.reason.startsWith('http://orders.invalid/ did not resolve'), unresolved.reason);
    const resolved = await check(prom.base, 'blackbox/dns-resolution', service('portal', [], { health_url: `http://${exporter}/` }));
    t.is(resolved.verdict, 'ruled_out', resolved.reason);
  },
);

testNeeding(
  needs(prometheusMissing, blackboxMissing),
  'blackbox/tcp-connect: ruled out while the TCP server accepts, holds once it is gone and connections are refused; HTTP probes are not TCP probes',
  async (t) => {
    const sockets = new Set<Socket>();
    const server: Server = createTcp((s) => {
      sockets.add(s.on('close', () => sockets.delete(s)));
      s.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const target = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    const close = () =>
      new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    t.teardown(close);
    const exporter = await startBlackbox(t, MODULES);
    const prom = await startPrometheus(t, {
      jobs: [
        { job: 'blackbox-tcp', targets: [target], probe: { exporter, module: 'tcp_connect' } },
        { job: 'blackbox', targets: [`http://${target}/`], probe: { exporter, module: 'http_2xx' } },
      ],
    });
    await untilPrometheus(prom.base, 'probe_success{job="blackbox-tcp"} == 1', (s) => s.length === 1);
    await untilPrometheus(prom.base, 'probe_success{job="blackbox"}', (s) => s.length === 1);
    const gateway = service('gateway', [workload(`job="blackbox-tcp", instance="${target}"`), workload('job="blackbox"')]);

    const open = await check(prom.base, 'blackbox/tcp-connect', gateway);
    t.is(open.verdict, 'ruled_out', open.reason);
    t.like(open.evidence[0], { observed: { tcp_probes: 1, failed: 0 } }, 'the HTTP probe (which fails: no HTTP answer) is not counted');

    await close();
    await untilPrometheus(prom.base, 'probe_success{job="blackbox-tcp"} == 0', (s) => s.length === 1);
    const refused = await check(prom.base, 'blackbox/tcp-connect', gateway);
    t.is(refused.verdict, 'holds', refused.reason);
    t.true(refused.reason.startsWith(`the TCP probe of ${target} (job blackbox-tcp) could not connect`), refused.reason);
    t.deepEqual(refused.subjects, [target]);
  },
);
