import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { POSTGRES } from '../applies.ts';
import { secondsText, session, sqlEvidence, statement } from '../sql.ts';

const ID = 'postgres/long-transaction';

/**
 * `postgres/long-transaction`: a client's transaction has been open `max_s` or more right now
 * (the pack's `long-transactions` statement): it holds its locks and its snapshot all along,
 * so vacuum cannot clean behind it and others may queue. Names the session. A session that
 * blocks others is `postgres/blocking-session`'s, which explains this one on the same pid.
 */
export const longTransaction: CauseDefinition = {
  id: ID,
  title: 'PostgreSQL transaction open too long',
  specificity: 55,
  applies: POSTGRES,
  reads: ['sql'],
  settings: { max_s: 600 },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const maxS = ctx.settings.max_s;
    if (typeof maxS !== 'number' || !(maxS > 0))
      return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: 'setting max_s must be a number of seconds above 0' };
    const r = await statement(ctx, 'long-transactions');
    const open = r.rows.map((x): Record<string, unknown> & { xact_s: number } => ({ ...x, xact_s: Number(x.xact_s ?? 0) }));
    const old = open.filter((x) => x.xact_s >= maxS);
    const observed = {
      max_s: maxS,
      open_transactions: open.length,
      truncated: r.truncated,
      oldest: open
        .slice(0, 10)
        .map((x) => ({ pid: x.pid, user: x.user_name, application: x.application_name, client: x.client, state: x.state, xact_s: x.xact_s, query: x.query })),
    };
    if (old.length > 0) {
      const top = old[0]!;
      const who = session(top.pid, top.user_name, top.application_name, top.client);
      return {
        verdict: 'holds',
        reason: `the transaction of session ${who} has been open ${secondsText(top.xact_s)} (${String(top.state)}; last statement: ${String(top.query ?? '').slice(0, 120)})${old.length > 1 ? `, and ${old.length - 1} more over ${secondsText(maxS)}` : ''}`,
        evidence: [sqlEvidence(r, observed, `${old.length} transaction(s) open ${secondsText(maxS)} or more; the oldest is ${who}'s.`)],
        subjects: old.map((x) => `pid ${String(x.pid)}`),
        verification: { cause: ID, expect: 'ruled_out', after_s: 60 },
      };
    }
    return {
      verdict: 'ruled_out',
      reason:
        open.length === 0 ? 'no client transaction is open' : `no transaction has been open ${secondsText(maxS)} (oldest ${secondsText(open[0]!.xact_s)})`,
      evidence: [sqlEvidence(r, observed, `${open.length} open transaction(s), none ${secondsText(maxS)} old.`)],
    };
  },
};
