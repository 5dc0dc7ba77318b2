import type { PackPlugin } from '../../host/plugins/contract.ts';
import { dependencyIncident } from './causes/dependency-incident.ts';
import { flappingAlert } from './causes/flapping-alert.ts';
import { recentChange } from './causes/recent-change.ts';

/**
 * The `core` pack: causes that need no particular technology. One file per cause under
 * `causes/`, its scenarios under `scenarios/`. See README.md.
 */
const pack: PackPlugin = { causes: [recentChange, dependencyIncident, flappingAlert] };

export default pack;
