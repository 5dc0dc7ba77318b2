// What a run of the eval prints, and the same as Markdown for docs/packs.md.
import type { Judged } from './judge.ts';

export interface RunReport {
  run: number;
  of: number;
  engine: string;
  startedAt: Date;
  seconds: number;
  commit: string;
  machine: string;
  judged: Judged[];
  ledger: string;
}

export interface Tally {
  right: number;
  total: number;
  falseHolds: number;
  misplaced: number;
  undiagnosed: number;
}

export function tally(judged: Judged[]): Tally {
  return {
    right: judged.filter((j) => j.right).length,
    total: judged.length,
    falseHolds: judged.reduce((n, j) => n + j.falseHolds.length, 0),
    misplaced: judged.filter((j) => j.misplaced).length,
    undiagnosed: judged.filter((j) => !j.settled).length,
  };
}

/** `eval: 14/16 scenarios right, 0 false holds, 0 misplaced (run 1 of 3)`: the line CI counts. */
export function summaryLine(r: RunReport): string {
  const t = tally(r.judged);
  const undiagnosed = t.undiagnosed > 0 ? `, ${t.undiagnosed} not diagnosed` : '';
  return `eval: ${t.right}/${t.total} scenarios right, ${t.falseHolds} false holds, ${t.misplaced} misplaced${undiagnosed} (run ${r.run} of ${r.of}, ${r.engine}, ${r.seconds} s)`;
}

const secs = (n: number | null): string => (n === null ? '-' : `${n}`);
const expectedTop = (j: Judged): string => (j.expected.top === null ? 'none' : j.expected.top.join(' or '));

/** One block per scenario: what was injected, what the service answered, and why it is wrong. */
export function text(r: RunReport): string {
  const out = [`eval run ${r.run} of ${r.of} on ${r.engine}, ${r.startedAt.toISOString()}, commit ${r.commit}, ${r.machine}`];
  for (const j of r.judged) {
    out.push('');
    out.push(`${j.right ? 'RIGHT' : 'WRONG'}  ${j.id}${j.nearMiss ? ' (near miss)' : ''}: ${j.injects}`);
    out.push(`   placed ${j.placed ?? '-'} (expected ${j.expected.placed}); top ${j.top ?? 'none'} (expected ${expectedTop(j)})`);
    out.push(`   holds: ${j.holds.join(', ') || 'none'}; unknown: ${j.unknowns.join(', ') || 'none'}`);
    out.push(
      `   alert→diagnosis ${secs(j.alertToDiagnosisS)} s, first arrival→diagnosis ${secs(j.arrivalToDiagnosisS)} s, checks ${secs(j.checksS)} s; proposal: ${j.proposal}; outcome: ${j.outcome || '-'}`,
    );
    for (const p of j.problems) out.push(`   ✗ ${p}`);
  }
  out.push('', `ledger: ${r.ledger}`, summaryLine(r));
  return out.join('\n');
}

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The run as a Markdown table, with its date, commit and machine. */
export function markdown(r: RunReport): string {
  const t = tally(r.judged);
  const rows = r.judged.map((j) =>
    [
      `\`${j.id}\`${j.nearMiss ? ' (near miss)' : ''}`,
      j.injects,
      j.placed ?? '-',
      j.top ?? 'none',
      j.holds.join(', ') || 'none',
      j.unknowns.join(', ') || 'none',
      secs(j.alertToDiagnosisS),
      secs(j.checksS),
      j.proposal,
      j.outcome || '-',
      j.right ? 'right' : `**wrong**: ${j.problems.join('; ')}`,
    ]
      .map(cell)
      .join(' | '),
  );
  return [
    `Run ${r.run} of ${r.of}, ${r.engine}, ${r.startedAt.toISOString()}, commit \`${r.commit}\`, ${r.machine}, ${r.seconds} s: ` +
      `**${t.right}/${t.total} right, ${t.falseHolds} false holds, ${t.misplaced} misplaced**${t.undiagnosed > 0 ? `, ${t.undiagnosed} not diagnosed` : ''}.`,
    '',
    '| Scenario | Injected | Placed | Top cause | Holds | Unknown | Alert→diagnosis (s) | Checks (s) | Proposal | Outcome | Result |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((row) => `| ${row} |`),
    '',
  ].join('\n');
}
