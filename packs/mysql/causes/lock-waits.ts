import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { MYSQL } from '../applies.ts';
import { secondsText, sqlEvidence, statement } from '../sql.ts';

const ID = 'mysql/lock-waits';

/**
 * `mysql/lock-waits`: InnoDB transactions have waited `wait_s` or more on a row lock another
 * transaction holds, right now (the pack's `lock-waits` statement through the `sql`
 * capability). Names the blocking session (its thread id, user, host, what it is doing, how long
 * its transaction has been open): the one a person ends with KILL after deciding to. Every
 * waiting transaction counts against the transaction at the root of its chain of waits.
 */
export const lockWaits: CauseDefinition = {
  id: ID,
  title: 'InnoDB lock waits behind a blocking session',
  specificity: 80,
  applies: MYSQL,
  reads: ['sql'],
  settings: { wait_s: 20 },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const waitS = ctx.settings.wait_s;
    if (typeof waitS !== 'number' || !(waitS >= 0))
      return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: 'setting wait_s must be a number of seconds, 0 or more' };
    const r = await statement(ctx, 'lock-waits');
    const waits = r.rows.map((x): Record<string, unknown> & { waiting_s: number } => ({ ...x, waiting_s: Number(x.waiting_s ?? 0) }));
    const long = waits.filter((x) => x.waiting_s >= waitS);
    const waitsOn = new Map<string, Set<string>>();
    const rowOf = new Map<string, Record<string, unknown>>();
    for (const x of waits) {
      const w = String(x.waiting_id);
      waitsOn.set(w, (waitsOn.get(w) ?? new Set()).add(String(x.blocking_id)));
      rowOf.set(String(x.blocking_id), x);
    }
    const roots = (id: string, seen = new Set<string>()): string[] => {
      if (seen.has(id)) return [];
      seen.add(id);
      const up = waitsOn.get(id);
      return up === undefined ? [id] : [...up].flatMap((b) => roots(b, seen));
    };
    const longest = new Map(waits.map((x) => [String(x.waiting_id), x.waiting_s]));
    const byBlocker = new Map<string, { row: Record<string, unknown>; waiting: number; longest: number }>();
    for (const w of new Set(long.map((x) => String(x.waiting_id))))
      for (const root of new Set(roots(w))) {
        const e = byBlocker.get(root) ?? { row: rowOf.get(root)!, waiting: 0, longest: 0 };
        e.waiting++;
        e.longest = Math.max(e.longest, longest.get(w) ?? 0);
        byBlocker.set(root, e);
      }
    const blockers = [...byBlocker.values()].sort((a, b) => b.waiting - a.waiting || b.longest - a.longest);
    const observed = {
      wait_s: waitS,
      waiting: waits.length,
      waiting_long: long.length,
      truncated: r.truncated,
      blockers: blockers.slice(0, 10).map((b) => ({
        thread: b.row.blocking_id,
        user: b.row.blocking_user,
        host: b.row.blocking_host,
        command: b.row.blocking_command,
        trx_s: Number(b.row.blocking_trx_s),
        query: b.row.blocking_query,
        rows_locked: b.row.blocking_rows_locked,
        waiting: b.waiting,
        longest_wait_s: b.longest,
      })),
    };
    if (blockers.length > 0) {
      const top = blockers[0]!;
      const who = `thread ${String(top.row.blocking_id)} (user ${String(top.row.blocking_user ?? '?')} from ${String(top.row.blocking_host ?? '?')})`;
      const doing =
        top.row.blocking_query == null
          ? `${String(top.row.blocking_command ?? 'idle')}, no statement running`
          : `running: ${String(top.row.blocking_query).slice(0, 120)}`;
      return {
        verdict: 'holds',
        reason: `session ${who} holds row locks ${top.waiting} transaction${top.waiting === 1 ? '' : 's'} ${top.waiting === 1 ? 'has' : 'have'} waited on for up to ${secondsText(top.longest)}; its transaction has been open ${secondsText(Number(top.row.blocking_trx_s))} (${doing})${blockers.length > 1 ? ` (and ${blockers.length - 1} other blocking session${blockers.length === 2 ? '' : 's'})` : ''}`,
        evidence: [sqlEvidence(r, observed, `${long.length} transaction(s) waited on a row lock for ${waitS} s or more; the blocking session is ${who}.`)],
        subjects: blockers.map((b) => `thread ${String(b.row.blocking_id)}`),
        verification: { cause: ID, expect: 'ruled_out', after_s: 60 },
      };
    }
    return {
      verdict: 'ruled_out',
      reason:
        waits.length === 0
          ? 'no InnoDB transaction waits on a lock'
          : `${waits.length} transaction${waits.length === 1 ? '' : 's'} wait on a lock, none for ${waitS} s yet (longest ${secondsText(Math.max(...waits.map((x) => x.waiting_s)))})`,
      evidence: [
        sqlEvidence(
          r,
          observed,
          waits.length === 0 ? 'No InnoDB transaction waits on a lock.' : `${waits.length} transaction(s) wait on a lock, each for less than ${waitS} s.`,
        ),
      ],
    };
  },
};
