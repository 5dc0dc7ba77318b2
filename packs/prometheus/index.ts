import type { PackPlugin } from '../../host/plugins/contract.ts';
import { diskFull } from './causes/disk-full.ts';
import { errorRate } from './causes/error-rate.ts';
import { latency } from './causes/latency.ts';
import { memoryPressure } from './causes/memory-pressure.ts';
import { restarts } from './causes/restarts.ts';
import { targetDown } from './causes/target-down.ts';

/**
 * The `prometheus` pack: causes a service's Prometheus metrics can prove or rule out, read-only
 * through the metrics connector the estate links to the service. One file per cause in
 * `causes/`, scenarios in `scenarios/`, what each reads and decides in README.md.
 */
const pack: PackPlugin = {
  causes: [targetDown, errorRate, latency, diskFull, memoryPressure, restarts],
};

export default pack;
