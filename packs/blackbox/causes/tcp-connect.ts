import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { noProbe, placeProbes, probeName } from '../probes.ts';

const ID = 'blackbox/tcp-connect';

/**
 * `blackbox/tcp-connect`: a TCP probe of the service fails although its address resolved: the
 * blackbox exporter's `tcp` prober could not connect (refused, or no answer within the module's
 * timeout), or could not complete the TLS handshake its module asks for. One query decides: the
 * `probe_success` of the service's probes that are TCP probes (they export
 * `probe_failed_due_to_regex` but no `probe_http_status_code`), whose own expected-answer check
 * did not fail (`probe_failed_due_to_regex == 0`: the connection was made and answered otherwise),
 * and whose address resolved (`probe_ip_protocol > 0`; a name that did not resolve is
 * `blackbox/dns-resolution`'s).
 */
export const tcpConnect: CauseDefinition = {
  id: ID,
  title: 'TCP connection failing',
  specificity: 60,
  applies: {
    alerts: ['BlackboxTcp*', 'BlackboxProbeTcp*', 'TcpConnect*', 'TCPConnect*', 'TcpPort*', 'PortUnreachable*'],
    labels: ['module=~".*tcp.*"', 'job=~".*tcp.*"'],
  },
  reads: ['metrics'],
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { evidenceOf, listed, num, overAll, samplesObserved } = ctx.lib.prometheus;
    const placed = await placeProbes(ctx);
    if (!placed.ok) return placed.answer;
    const { p, where } = placed;

    const tcp = await ctx.metrics.query(
      overAll(p, (s) => `probe_success{${s}} and probe_failed_due_to_regex{${s}} == 0 unless probe_http_status_code{${s}} and probe_ip_protocol{${s}} > 0`),
    );
    if (tcp.samples.length === 0)
      return noProbe('with the tcp prober whose address resolved', where, 'probe its TCP endpoints (module prober: tcp) and link them');
    const failed = tcp.samples.filter((x) => num(x.value) === 0);
    const all = tcp.samples.length;
    const evidence = [
      evidenceOf(
        tcp,
        'metric',
        samplesObserved(failed.length > 0 ? failed : tcp.samples, { tcp_probes: all, failed: failed.length }),
        failed.length > 0
          ? `${failed.length} of ${all} TCP probes failed after resolving their address: ${listed(failed.map((x) => probeName(x.metric)))}.`
          : `${all === 1 ? 'The one TCP probe' : `All ${all} TCP probes`} connected.`,
      ),
    ];
    if (failed.length > 0)
      return {
        verdict: 'holds',
        reason: `the TCP ${failed.length === 1 ? 'probe' : 'probes'} of ${listed(failed.map((x) => probeName(x.metric)))} could not connect (refused, or no answer within the module's timeout), or could not complete the TLS handshake where the module asks for one (${where})`,
        evidence,
        subjects: [...new Set(failed.map((x) => x.metric.instance ?? probeName(x.metric)))],
        verification: { cause: ID, expect: 'ruled_out', after_s: 60 },
      };
    return {
      verdict: 'ruled_out',
      reason: `${all === 1 ? 'the one TCP probe' : `all ${all} TCP probes`} of ${where} connected`,
      evidence,
    };
  },
};
