// The Debian programs the packs' live tests and the eval run beside Prometheus (installed by
// .ci/run); each path can be overridden by its variable. No test runtime in here, so the eval and
// the benchmarks import it outside ava.
export const NODE_EXPORTER_BIN = process.env.NODE_EXPORTER_BIN?.trim() || '/usr/bin/prometheus-node-exporter';
export const BLACKBOX_BIN = process.env.BLACKBOX_EXPORTER_BIN?.trim() || '/usr/bin/prometheus-blackbox-exporter';
export const DNSMASQ_BIN = process.env.DNSMASQ_BIN?.trim() || '/usr/sbin/dnsmasq';
