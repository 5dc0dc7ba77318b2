import type { PackPlugin } from '../../host/plugins/contract.ts';
import { blocking } from './causes/blocking.ts';
import { connections } from './causes/connections.ts';
import { deadlocks } from './causes/deadlocks.ts';
import { down } from './causes/down.ts';
import { longTransaction } from './causes/long-transaction.ts';
import { replication } from './causes/replication.ts';
import { STATEMENTS } from './statements.ts';

/**
 * The `postgres` pack: what prometheus-postgres-exporter's series and a monitoring account's
 * read-only `sql` prove about a PostgreSQL. One file per cause in `causes/`, the statements it
 * runs in `statements.ts`, scenarios in `scenarios/`, README.md.
 */
const pack: PackPlugin = {
  causes: [down, connections, blocking, longTransaction, deadlocks, replication],
  named: { sql: STATEMENTS },
};

export default pack;
