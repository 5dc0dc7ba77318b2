import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { noProbe, placeProbes, probeName } from '../probes.ts';

const ID = 'blackbox/certificate-expiry';

/** The labels the blackbox exporter names a probed certificate with (`probe_ssl_last_chain_info`). */
const CERT_LABELS = 'fingerprint_sha256, issuer, subject, subjectalternative';

/**
 * `blackbox/certificate-expiry`: a TLS certificate the service's probes read expires within
 * `days`, or has expired. One query decides and names it: the days left until the earliest
 * not-after of the chain the server presented (`probe_ssl_earliest_cert_expiry`, its last
 * reading within `lookback`, so that a probe that verifies certificates and fails once one has
 * expired still shows when), joined to the leaf's subject, issuer, names and fingerprint
 * (`probe_ssl_last_chain_info`) while the probe reads them.
 */
export const certificateExpiry: CauseDefinition = {
  id: ID,
  title: 'TLS certificate expired or expiring',
  specificity: 70,
  applies: {
    alerts: [
      'BlackboxSslCertificate*',
      'BlackboxTlsCertificate*',
      'SslCertificate*',
      'SSLCertificate*',
      'SslCert*',
      'SSLCert*',
      'TlsCert*',
      'TLSCert*',
      'Certificate*',
      'CertExpir*',
      'X509*',
    ],
  },
  reads: ['metrics'],
  settings: { days: 14, lookback: '1h' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { evidenceOf, labelsOf, listed, MAX_SERIES, num, overAll, rounded } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const days = set.number('days', 0, 3650);
    const lookback = set.duration('lookback');
    const placed = await placeProbes(ctx, set.problem());
    if (!placed.ok) return placed.answer;
    const { p, where } = placed;

    const left = (s: string) => `(last_over_time(probe_ssl_earliest_cert_expiry{${s}}[${lookback.text}]) - time()) / 86400`;
    const named = (s: string) =>
      `${left(s)} * ignoring (${CERT_LABELS}) group_left (${CERT_LABELS}) probe_ssl_last_chain_info{${s}} or ignoring (${CERT_LABELS}) ${left(s)}`;
    const r = await ctx.metrics.query(overAll(p, named));
    if (r.samples.length === 0)
      return noProbe(
        `read a TLS certificate in the last ${lookback.text} (probe_ssl_earliest_cert_expiry)`,
        where,
        'probe its TLS endpoints with a module that completes the handshake (see the pack README) and link them',
      );
    const at = Date.parse(ctx.at);
    const certs = r.samples
      .map((x) => ({ sample: x, left: num(x.value), notAfter: new Date(Math.round(at / 1000 + num(x.value) * 86400) * 1000).toISOString() }))
      .sort((a, b) => a.left - b.left);
    const soon = certs.filter((c) => c.left < days);
    const describe = (c: (typeof certs)[number]) => {
      const m = c.sample.metric;
      const who = m.subject === undefined ? 'its certificate (no longer read: the probe fails)' : `${m.subject}, issued by ${m.issuer ?? '?'}`;
      const when = c.left < 0 ? `expired ${ago(-c.left)} ago` : `expires in ${ago(c.left)}`;
      return `${probeName(m)}: ${who}, ${when} (not after ${c.notAfter})`;
    };
    const expired = soon.filter((c) => c.left < 0).length;
    const evidence = [
      evidenceOf(
        r,
        'metric',
        {
          threshold_days: days,
          certificates: certs.slice(0, MAX_SERIES).map((c) => ({ labels: labelsOf(c.sample.metric), days_left: rounded(c.left), not_after: c.notAfter })),
          total: certs.length,
          expiring: soon.length,
          expired,
        },
        soon.length > 0
          ? `${soon.length} of ${certs.length} certificates probed ${expired === soon.length ? (expired === 1 ? 'has expired' : 'have expired') : `expire within ${days} days${expired > 0 ? ` (${expired} already)` : ''}`}: ${listed(soon.map(describe))}.`
          : `Every certificate probed is valid for more than ${days} days (soonest: ${describe(certs[0]!)}).`,
      ),
    ];
    if (soon.length > 0)
      return {
        verdict: 'holds',
        reason: `${listed(soon.map(describe), 3)} (${where})`,
        evidence,
        subjects: [...new Set(soon.map((c) => c.sample.metric.instance ?? probeName(c.sample.metric)))],
        verification: { cause: ID, expect: 'ruled_out', after_s: 120 },
      };
    return {
      verdict: 'ruled_out',
      reason: `every certificate the probes of ${where} read is valid for more than ${days} days (soonest: ${describe(certs[0]!)})`,
      evidence,
    };
  },
};

/** Days for people: `3.0 days`, `5 hours`, `12 minutes`. */
function ago(d: number): string {
  if (d >= 1) return `${d.toFixed(1)} days`;
  const h = d * 24;
  return h >= 1 ? `${Math.floor(h)} hour${Math.floor(h) === 1 ? '' : 's'}` : `${Math.max(1, Math.floor(h * 60))} minutes`;
}
