import type { PackPlugin } from '../../host/plugins/contract.ts';
import { connections } from './causes/connections.ts';
import { down } from './causes/down.ts';
import { lockWaits } from './causes/lock-waits.ts';
import { replication } from './causes/replication.ts';
import { slowQueries } from './causes/slow-queries.ts';
import { STATEMENTS } from './statements.ts';

/**
 * The `mysql` pack: what prometheus-mysqld-exporter's series and a monitoring account's
 * read-only `sql` prove about a MariaDB or MySQL. One file per cause in `causes/`, the statement
 * it runs in `statements.ts`, scenarios in `scenarios/`, README.md.
 */
const pack: PackPlugin = {
  causes: [down, connections, lockWaits, slowQueries, replication],
  named: { sql: STATEMENTS },
};

export default pack;
