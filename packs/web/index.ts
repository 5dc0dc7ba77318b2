import type { PackPlugin } from '../../host/plugins/contract.ts';
import { backend5xx } from './causes/backend-5xx.ts';
import { backendDown } from './causes/backend-down.ts';
import { connectionLimit } from './causes/connection-limit.ts';
import { proxy5xx } from './causes/proxy-5xx.ts';

/**
 * The `web` pack: the web tier in front of a service (nginx through prometheus-nginx-exporter,
 * HAProxy through its built-in Prometheus exporter), read-only through the metrics connector.
 * One file per cause in `causes/`, scenarios in `scenarios/`, what each reads in README.md.
 */
const pack: PackPlugin = {
  causes: [backendDown, proxy5xx, backend5xx, connectionLimit],
};

export default pack;
