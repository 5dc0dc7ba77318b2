import type { PackPlugin } from '../../host/plugins/contract.ts';
import { certificateExpiry } from './causes/certificate-expiry.ts';
import { dnsResolution } from './causes/dns-resolution.ts';
import { tcpConnect } from './causes/tcp-connect.ts';

/**
 * The `blackbox` pack: what the Prometheus blackbox exporter's probes prove or rule out about how
 * a service is reached: TLS certificates, DNS, TCP. Read-only through the metrics connector the
 * estate links to the service. One file per cause in `causes/`, scenarios in `scenarios/`, what
 * each reads and decides in README.md.
 */
const pack: PackPlugin = {
  causes: [certificateExpiry, dnsResolution, tcpConnect],
};

export default pack;
