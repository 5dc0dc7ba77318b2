import type { CauseDefinition, CheckContext } from '../../../host/plugins/contract.ts';
import { MYSQL } from '../applies.ts';

const ID = 'mysql/slow-queries';

/**
 * `mysql/slow-queries`: a server counted at least `min` slow queries in the window
 * (`increase(mysql_global_status_slow_queries[window])`: statements over its
 * `long_query_time`). The window is the alert's own when shorter; the check is the pack
 * library's `counterCheck`.
 */
export const slowQueries: CauseDefinition = {
  id: ID,
  title: 'MySQL slow queries rising',
  specificity: 50,
  applies: MYSQL,
  reads: ['metrics'],
  settings: { min: 10, window: '10m' },
  check: (ctx: CheckContext) =>
    ctx.lib.prometheus.counterCheck(ctx, {
      id: ID,
      metric: 'mysql_global_status_slow_queries',
      by: ['instance'],
      exporter: 'prometheus-mysqld-exporter',
      observed: { rows: 'servers', name: 'instance', value: 'slow_queries' },
      counted: 'Slow queries',
      holds: ({ hit, shown, min, window, where }) =>
        `${shown(hit)} slow queries in the last ${window} on ${where} (at least ${min}): statements over long_query_time`,
      ruledOut: ({ rows, shown, min, window, where }) =>
        `fewer than ${min} slow queries in the last ${window} on every server of ${where} (most: ${shown(rows.slice(0, 1))})`,
    }),
};
