import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { POSTGRES } from '../applies.ts';
import { secondsText, sqlEvidence, statement } from '../sql.ts';

const ID = 'postgres/replication';

/**
 * `postgres/replication`: replication is broken or behind, as the server the sql connector
 * reads sees it (the pack's `replication` statement). On a replica: its WAL receiver is not
 * streaming (the primary gone, the slot or credentials refused). On a primary: a standby's
 * replay lag is `max_lag_s` or more, or a standby is connected but not streaming. A primary
 * with no standby at all is ruled out (nothing is replicated to break).
 */
export const replication: CauseDefinition = {
  id: ID,
  title: 'PostgreSQL replication broken or lagging',
  specificity: 65,
  applies: POSTGRES,
  reads: ['sql'],
  settings: { max_lag_s: 60 },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const maxLag = ctx.settings.max_lag_s;
    if (typeof maxLag !== 'number' || !(maxLag > 0))
      return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: 'setting max_lag_s must be a number of seconds above 0' };
    const r = await statement(ctx, 'replication');
    const first = r.rows[0] ?? {};
    if (first.replica === true) {
      const observed = { replica: true, receiver: first.receiver ?? null, primary_host: first.primary_host ?? null, replay_age_s: first.replay_age_s ?? null };
      if (first.receiver !== 'streaming')
        return {
          verdict: 'holds',
          reason: `this server is a replica whose WAL receiver is ${first.receiver == null ? 'not running' : `"${String(first.receiver)}"`}, not streaming from its primary: it falls further behind${first.replay_age_s == null ? '' : ` (last transaction replayed ${secondsText(first.replay_age_s)} ago)`}`,
          evidence: [sqlEvidence(r, observed, `Replica; WAL receiver ${String(first.receiver ?? 'not running')}.`)],
          subjects: [r.reading.source],
          verification: { cause: ID, expect: 'ruled_out', after_s: 60 },
        };
      return {
        verdict: 'ruled_out',
        reason: `this server is a replica streaming from ${String(first.primary_host ?? 'its primary')}`,
        evidence: [sqlEvidence(r, observed, 'Replica; WAL receiver streaming.')],
      };
    }
    const standbys = r.rows.filter((x) => x.standby != null || x.standby_state != null);
    const observed = {
      replica: false,
      standbys: standbys.slice(0, 20).map((x) => ({ name: x.standby, client: x.standby_client, state: x.standby_state, replay_lag_s: x.standby_replay_lag_s })),
    };
    if (standbys.length === 0)
      return {
        verdict: 'ruled_out',
        reason: 'this server is a primary with no standby connected: nothing is replicated from it',
        evidence: [sqlEvidence(r, observed, 'Primary; no standby in pg_stat_replication.')],
      };
    const name = (x: Record<string, unknown>) => `${String(x.standby ?? '?')}${x.standby_client == null ? '' : ` from ${String(x.standby_client)}`}`;
    const bad = standbys.filter((x) => x.standby_state !== 'streaming' || Number(x.standby_replay_lag_s ?? 0) >= maxLag);
    if (bad.length > 0)
      return {
        verdict: 'holds',
        reason: `standby ${bad.map((x) => `${name(x)} is ${String(x.standby_state)}${x.standby_replay_lag_s == null ? '' : ` ${secondsText(x.standby_replay_lag_s)} behind`}`).join('; ')} (at most ${secondsText(maxLag)} behind is normal here)`,
        evidence: [sqlEvidence(r, observed, `Primary; ${bad.length} of ${standbys.length} standby(s) not streaming or ${secondsText(maxLag)} behind.`)],
        subjects: bad.map((x) => String(x.standby ?? x.standby_client)),
        verification: { cause: ID, expect: 'ruled_out', after_s: 120 },
      };
    return {
      verdict: 'ruled_out',
      reason: `every standby streams less than ${secondsText(maxLag)} behind (${standbys.map(name).join(', ')})`,
      evidence: [sqlEvidence(r, observed, `Primary; ${standbys.length} standby(s) streaming.`)],
    };
  },
};
