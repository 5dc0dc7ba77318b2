import type { CauseDefinition, CheckContext } from '../../../host/plugins/contract.ts';
import { POSTGRES } from '../applies.ts';

const ID = 'postgres/connections-near-limit';

/**
 * `postgres/connections-near-limit`: a PostgreSQL's sessions (every state, from
 * `pg_stat_activity_count`) reach `ratio` of its `max_connections` at the check's moment: new
 * connections are about to be refused ("sorry, too many clients already"). The check is the
 * pack library's `connectionsCheck`.
 */
export const connections: CauseDefinition = {
  id: ID,
  title: 'PostgreSQL connections near max_connections',
  specificity: 60,
  applies: POSTGRES,
  reads: ['metrics'],
  settings: { ratio: 0.9 },
  check: (ctx: CheckContext) =>
    ctx.lib.prometheus.connectionsCheck(ctx, {
      id: ID,
      product: 'PostgreSQL',
      query: (s) => `sum by (instance) (pg_stat_activity_count{${s}}) / max by (instance) (pg_settings_max_connections{${s}})`,
      series: 'pg_stat_activity_count or pg_settings_max_connections',
      exporter: 'prometheus-postgres-exporter',
    }),
};
