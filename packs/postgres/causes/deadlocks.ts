import type { CauseDefinition, CheckContext } from '../../../host/plugins/contract.ts';
import { POSTGRES } from '../applies.ts';

const ID = 'postgres/deadlocks';

/**
 * `postgres/deadlocks`: PostgreSQL detected at least `min` deadlocks in the window
 * (`increase(pg_stat_database_deadlocks[window])`, per database): transactions were aborted
 * with "deadlock detected". The window is the alert's own when shorter; the check is the pack
 * library's `counterCheck`.
 */
export const deadlocks: CauseDefinition = {
  id: ID,
  title: 'PostgreSQL deadlocks rising',
  specificity: 65,
  applies: POSTGRES,
  reads: ['metrics'],
  settings: { min: 1, window: '10m' },
  check: (ctx: CheckContext) =>
    ctx.lib.prometheus.counterCheck(ctx, {
      id: ID,
      metric: 'pg_stat_database_deadlocks',
      by: ['instance', 'datname'],
      exporter: 'prometheus-postgres-exporter',
      name: (m) => `${ctx.lib.prometheus.seriesName(m, ['instance'])} database ${m.datname ?? '?'}`,
      observed: { rows: 'databases', name: 'database', value: 'deadlocks' },
      counted: 'Deadlocks',
      holds: ({ total, hit, shown, window, where }) =>
        `${Math.round(total)} deadlock${Math.round(total) === 1 ? '' : 's'} in the last ${window} on ${where} (${shown(hit)}): transactions were aborted with "deadlock detected"`,
      ruledOut: ({ min, window, where }) => `no database of ${where} had ${min > 1 ? `${min} deadlocks` : 'a deadlock'} in the last ${window}`,
    }),
};
