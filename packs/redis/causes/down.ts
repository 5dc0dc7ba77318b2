import type { CauseDefinition, CheckContext } from '../../../host/plugins/contract.ts';
import { REDIS } from '../applies.ts';

const ID = 'redis/down';

/**
 * `redis/down`: the exporter runs but cannot reach its Redis (`redis_up == 0`), at the check's
 * moment. One query, the evidence (the pack library's `upCheck`). An exporter that cannot be
 * scraped at all is `prometheus/target-down`'s. See README.md.
 */
export const down: CauseDefinition = {
  id: ID,
  title: 'Redis down',
  specificity: 70,
  applies: REDIS,
  reads: ['metrics'],
  check: (ctx: CheckContext) =>
    ctx.lib.prometheus.upCheck(ctx, { id: ID, metric: 'redis_up', product: 'Redis', exporter: 'prometheus-redis-exporter', counted: 'instances' }),
};
