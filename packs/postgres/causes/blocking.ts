import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { POSTGRES } from '../applies.ts';
import { secondsText, session, sqlEvidence, statement } from '../sql.ts';

const ID = 'postgres/blocking-session';

/**
 * `postgres/blocking-session`: a session holds a lock other sessions have waited on for
 * `wait_s` or more, right now (pg_stat_activity and pg_blocking_pids through the `sql`
 * capability, the pack's `blocking-sessions` statement). Names the blocking session (pid, user,
 * application, client, how long its transaction has been open, its last statement): the one a
 * person ends with pg_terminate_backend after deciding to. No remedy is proposed.
 */
export const blocking: CauseDefinition = {
  id: ID,
  title: 'PostgreSQL session blocking others',
  specificity: 80,
  applies: POSTGRES,
  reads: ['sql'],
  settings: { wait_s: 20 },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const waitS = ctx.settings.wait_s;
    if (typeof waitS !== 'number' || !(waitS >= 0))
      return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: 'setting wait_s must be a number of seconds, 0 or more' };
    const r = await statement(ctx, 'blocking-sessions');
    const waits = r.rows.map((x): Record<string, unknown> & { waiting_s: number } => ({ ...x, waiting_s: Number(x.waiting_s ?? 0) }));
    const long = waits.filter((x) => x.waiting_s >= waitS);
    // Every waiting session counts against the session at the root of its chain of waits (a
    // second waiter queues behind the first, which waits on the holder): the one to look at.
    const waitsOn = new Map<string, Set<string>>();
    const rowOf = new Map<string, Record<string, unknown>>();
    for (const x of waits) {
      const w = String(x.waiting_pid);
      waitsOn.set(w, (waitsOn.get(w) ?? new Set()).add(String(x.blocking_pid)));
      rowOf.set(String(x.blocking_pid), x);
    }
    const roots = (pid: string, seen = new Set<string>()): string[] => {
      if (seen.has(pid)) return [];
      seen.add(pid);
      const up = waitsOn.get(pid);
      return up === undefined ? [pid] : [...up].flatMap((b) => roots(b, seen));
    };
    const byBlocker = new Map<string, { row: Record<string, unknown>; waiting: number; longest: number }>();
    const longest = new Map(waits.map((x) => [String(x.waiting_pid), x.waiting_s]));
    for (const w of new Set(long.map((x) => String(x.waiting_pid))))
      for (const root of new Set(roots(w))) {
        const e = byBlocker.get(root) ?? { row: rowOf.get(root)!, waiting: 0, longest: 0 };
        e.waiting++;
        e.longest = Math.max(e.longest, longest.get(w) ?? 0);
        byBlocker.set(root, e);
      }
    const blockers = [...byBlocker.values()].sort((a, b) => b.waiting - a.waiting || b.longest - a.longest);
    const observed = {
      wait_s: waitS,
      waiting_sessions: waits.length,
      waiting_long: long.length,
      truncated: r.truncated,
      blockers: blockers.slice(0, 10).map((b) => ({
        pid: b.row.blocking_pid,
        user: b.row.blocking_user,
        application: b.row.blocking_application,
        client: b.row.blocking_client,
        state: b.row.blocking_state,
        xact_s: b.row.blocking_xact_s,
        query: b.row.blocking_query,
        waiting: b.waiting,
        longest_wait_s: b.longest,
      })),
    };
    if (blockers.length > 0) {
      const top = blockers[0]!;
      const who = session(top.row.blocking_pid, top.row.blocking_user, top.row.blocking_application, top.row.blocking_client);
      const what = `${who}, ${String(top.row.blocking_state ?? 'in an unknown state')}, its transaction open ${secondsText(top.row.blocking_xact_s)}, last statement: ${String(top.row.blocking_query ?? '').slice(0, 120)}`;
      return {
        verdict: 'holds',
        reason: `session ${what} blocks ${top.waiting} session${top.waiting === 1 ? '' : 's'} waiting on its lock for up to ${secondsText(top.longest)}${blockers.length > 1 ? ` (and ${blockers.length - 1} other blocking session${blockers.length === 2 ? '' : 's'})` : ''}`,
        evidence: [sqlEvidence(r, observed, `${long.length} session(s) waited on a lock for ${waitS} s or more; the blocking session is ${who}.`)],
        subjects: blockers.map((b) => `pid ${String(b.row.blocking_pid)}`),
        verification: { cause: ID, expect: 'ruled_out', after_s: 60 },
      };
    }
    return {
      verdict: 'ruled_out',
      reason:
        waits.length === 0
          ? 'no session waits on a lock'
          : `${waits.length} session${waits.length === 1 ? '' : 's'} wait on a lock, none for ${waitS} s yet (longest ${secondsText(Math.max(...waits.map((x) => x.waiting_s)))})`,
      evidence: [
        sqlEvidence(
          r,
          observed,
          waits.length === 0 ? 'No session waits on a lock.' : `${waits.length} session(s) wait on a lock, each for less than ${waitS} s.`,
        ),
      ],
    };
  },
};
