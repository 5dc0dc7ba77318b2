import type { CauseDefinition, CheckAnswer, CheckContext, MetricSample } from '../../../host/plugins/contract.ts';
import { noProbe, placeProbes, probeName } from '../probes.ts';

const ID = 'blackbox/dns-resolution';

/**
 * `blackbox/dns-resolution`: a name of the service does not resolve. Two reads of its blackbox
 * exporter probes, both evidence: its DNS probes (the `dns` prober, asking a DNS server for a
 * name: `probe_success` of the probes that have `probe_dns_query_succeeded`) that got no answer
 * their module accepts, and every probe's own resolution of the address it probes
 * (`probe_ip_protocol` is 0 when the name did not resolve, before any connection was tried).
 */
export const dnsResolution: CauseDefinition = {
  id: ID,
  title: 'DNS resolution failing',
  specificity: 70,
  applies: {
    alerts: ['BlackboxProbeFailed', 'BlackboxDns*', 'Dns*', 'DNS*'],
    labels: ['module=~".*dns.*"'],
  },
  reads: ['metrics'],
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { evidenceOf, listed, num, overAll, samplesObserved } = ctx.lib.prometheus;
    const placed = await placeProbes(ctx);
    if (!placed.ok) return placed.answer;
    const { p, where } = placed;

    const dns = await ctx.metrics.query(overAll(p, (s) => `probe_success{${s}} and probe_dns_query_succeeded{${s}}`));
    const resolved = await ctx.metrics.query(overAll(p, (s) => `probe_ip_protocol{${s}}`));
    if (dns.samples.length === 0 && resolved.samples.length === 0)
      return noProbe('at all (probe_success, probe_ip_protocol)', where, 'link its probes as workloads, or give it the health URL its blackbox probe targets');
    const zero = (xs: MetricSample[]) => xs.filter((x) => num(x.value) === 0);
    const failedDns = zero(dns.samples);
    const unresolved = zero(resolved.samples);
    const evidence = [
      evidenceOf(
        dns,
        'metric',
        samplesObserved(failedDns.length > 0 ? failedDns : dns.samples, { dns_probes: dns.samples.length, failed: failedDns.length }),
        dns.samples.length === 0
          ? 'The service has no DNS probe (the dns prober).'
          : failedDns.length > 0
            ? `${failedDns.length} of ${dns.samples.length} DNS probes got no answer their module accepts (no answer, an error such as NXDOMAIN or SERVFAIL, or not the records expected): ${listed(failedDns.map((x) => probeName(x.metric)))}.`
            : `All ${dns.samples.length} DNS probes got the answer their module expects.`,
      ),
      evidenceOf(
        resolved,
        'metric',
        samplesObserved(unresolved.length > 0 ? unresolved : resolved.samples, { probes: resolved.samples.length, unresolved: unresolved.length }),
        unresolved.length > 0
          ? `${unresolved.length} of ${resolved.samples.length} probes could not resolve the name of what they probe (probe_ip_protocol 0): ${listed(unresolved.map((x) => probeName(x.metric)))}.`
          : `All ${resolved.samples.length} probes resolved the address they probe.`,
      ),
    ];
    if (failedDns.length > 0 || unresolved.length > 0) {
      const parts = [
        ...(failedDns.length > 0 ? [`the DNS probes of ${listed(failedDns.map((x) => probeName(x.metric)))} got no answer their module accepts`] : []),
        ...(unresolved.length > 0 ? [`${listed(unresolved.map((x) => probeName(x.metric)))} did not resolve`] : []),
      ];
      return {
        verdict: 'holds',
        reason: `${parts.join('; ')} (${where})`,
        evidence,
        subjects: [...new Set([...failedDns, ...unresolved].map((x) => x.metric.instance ?? probeName(x.metric)))],
        verification: { cause: ID, expect: 'ruled_out', after_s: 60 },
      };
    }
    return {
      verdict: 'ruled_out',
      reason: `every probe of ${where} resolved what it probes (${resolved.samples.length} probes${dns.samples.length > 0 ? `, ${dns.samples.length} DNS probes answered as expected` : ''})`,
      evidence,
    };
  },
};
