// The Debian programs the eval runs (installed by .ci/run); each path can be overridden by its variable.
export { PROMETHEUS_BIN } from '../helpers/prometheus-server.ts';

/** As test/helpers/alertmanager.ts has it, which cannot be imported outside ava (it declares tests). */
export const ALERTMANAGER_BIN = process.env.ALERTMANAGER_BIN?.trim() || '/usr/bin/prometheus-alertmanager';
export { BLACKBOX_BIN, NODE_EXPORTER_BIN } from '../helpers/exporter-bins.ts';
