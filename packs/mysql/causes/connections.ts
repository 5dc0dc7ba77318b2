import type { CauseDefinition, CheckContext } from '../../../host/plugins/contract.ts';
import { MYSQL } from '../applies.ts';

const ID = 'mysql/connections-near-limit';

/**
 * `mysql/connections-near-limit`: a server's connected threads (`Threads_connected`) reach
 * `ratio` of its `max_connections` at the check's moment: new connections are about to be
 * refused ("Too many connections"). The check is the pack library's `connectionsCheck`.
 */
export const connections: CauseDefinition = {
  id: ID,
  title: 'MySQL connections near max_connections',
  specificity: 60,
  applies: MYSQL,
  reads: ['metrics'],
  settings: { ratio: 0.9 },
  check: (ctx: CheckContext) =>
    ctx.lib.prometheus.connectionsCheck(ctx, {
      id: ID,
      product: 'MySQL',
      query: (s) => `max by (instance) (mysql_global_status_threads_connected{${s}}) / max by (instance) (mysql_global_variables_max_connections{${s}})`,
      series: 'mysql_global_status_threads_connected or mysql_global_variables_max_connections',
      exporter: 'prometheus-mysqld-exporter',
    }),
};
