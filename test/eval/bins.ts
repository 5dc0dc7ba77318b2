// The Debian programs the eval runs (installed by .ci/run); each path can be overridden by its variable.
export { PROMETHEUS_BIN } from '../helpers/prometheus-server.ts';

/** As test/helpers/alertmanager.ts has it, which cannot be imported outside ava (it declares tests). */
export const ALERTMANAGER_BIN = process.env.ALERTMANAGER_BIN?.trim() || '/usr/bin/prometheus-alertmanager';
export const NODE_EXPORTER_BIN = process.env.NODE_EXPORTER_BIN?.trim() || '/usr/bin/prometheus-node-exporter';
export const BLACKBOX_BIN = process.env.BLACKBOX_EXPORTER_BIN?.trim() || '/usr/bin/prometheus-blackbox-exporter';
