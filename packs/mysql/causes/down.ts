import type { CauseDefinition, CheckContext } from '../../../host/plugins/contract.ts';
import { MYSQL } from '../applies.ts';

const ID = 'mysql/down';

/**
 * `mysql/down`: the exporter runs but cannot reach its MySQL (`mysql_up == 0`), at the
 * check's moment. An exporter that cannot be scraped at all is `prometheus/target-down`'s.
 * The check is the pack library's `upCheck`.
 */
export const down: CauseDefinition = {
  id: ID,
  title: 'MySQL down',
  specificity: 70,
  applies: MYSQL,
  reads: ['metrics'],
  check: (ctx: CheckContext) =>
    ctx.lib.prometheus.upCheck(ctx, { id: ID, metric: 'mysql_up', product: 'MySQL', exporter: 'prometheus-mysqld-exporter', counted: 'servers' }),
};
