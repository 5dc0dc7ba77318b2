import type { CauseDefinition, CheckContext } from '../../../host/plugins/contract.ts';
import { POSTGRES } from '../applies.ts';

const ID = 'postgres/down';

/**
 * `postgres/down`: the exporter runs but cannot reach its PostgreSQL (`pg_up == 0`), at the
 * check's moment. An exporter that cannot be scraped at all is `prometheus/target-down`'s.
 * The check is the pack library's `upCheck`.
 */
export const down: CauseDefinition = {
  id: ID,
  title: 'PostgreSQL down',
  specificity: 70,
  applies: POSTGRES,
  reads: ['metrics'],
  check: (ctx: CheckContext) =>
    ctx.lib.prometheus.upCheck(ctx, {
      id: 'postgres/down',
      metric: 'pg_up',
      product: 'PostgreSQL',
      exporter: 'prometheus-postgres-exporter',
      counted: 'servers',
    }),
};
