import type { PackPlugin } from '../../host/plugins/contract.ts';
import { consumersStuck } from './causes/consumers-stuck.ts';
import { noConsumers } from './causes/no-consumers.ts';
import { queueBacklog } from './causes/queue-backlog.ts';
import { resourceAlarm } from './causes/resource-alarm.ts';

/**
 * The `rabbitmq` pack: what the rabbitmq_prometheus plugin's series prove about a broker and its
 * queues, read-only through the metrics connector. One file per cause in `causes/`, scenarios in
 * `scenarios/`, README.md.
 */
const pack: PackPlugin = {
  causes: [queueBacklog, noConsumers, consumersStuck, resourceAlarm],
};

export default pack;
