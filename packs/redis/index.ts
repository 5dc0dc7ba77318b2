import type { PackPlugin } from '../../host/plugins/contract.ts';
import { down } from './causes/down.ts';
import { memoryFull } from './causes/memory-full.ts';
import { rejectedConnections } from './causes/rejected-connections.ts';
import { replicationBroken } from './causes/replication-broken.ts';

/**
 * The `redis` pack: what prometheus-redis-exporter's series prove about a Redis, read-only through
 * the metrics connector. One file per cause in `causes/`, scenarios in `scenarios/`, README.md.
 */
const pack: PackPlugin = {
  causes: [down, memoryFull, rejectedConnections, replicationBroken],
};

export default pack;
