import { markdownText } from '../escape.ts';
import { GOVERNANCE_LIMIT, type DigestData } from './digest.ts';

/**
 * Text from outside (alert names, services, sources, people, reasons, connector problems) as
 * Markdown that shows it literally: the one escaping of every text that leaves the service
 * (host/escape.ts). Line breaks become spaces.
 */
const e = markdownText;

/** Seconds as people read them: `45 s`, `3 min 5 s`, `2 h 10 min`, `3 d 4 h`; `no sample` for null. */
export function duration(s: number | null): string {
  if (s === null) return 'no sample';
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

/** The line under a capped list saying how many older entries of the window it does not show (none when all are shown). */
const leftOut = (n: number, what: string): string[] =>
  n === 0 ? [] : ['', `${n} older ${what}${n === 1 ? ' is' : 's are'} not listed (only the newest ${GOVERNANCE_LIMIT} are); the ledger has them all.`];

const percent = (share: number): string => `${Math.round(share * 1000) / 10} %`;

function table(head: string[], rows: string[][], right: boolean[]): string[] {
  return [`| ${head.join(' | ')} |`, `|${right.map((r) => (r ? '---:' : '---')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
}

/**
 * The digest as Markdown: a pure function of its data with a fixed layout (the sections in the
 * order of the data, empty ones saying so), snapshot-tested in test/fixtures/digest.md.
 */
export function renderDigest(d: DigestData): string {
  const out: string[] = [];
  const section = (title: string, lines: string[]) => out.push('', `## ${title}`, '', ...lines);
  out.push(`# Digest of the last ${d.days === 1 ? 'day' : `${d.days} days`}`, '', `From ${d.from} to ${d.to}.`);

  const ep = d.episodes;
  section('Episodes', [
    `- Opened: ${ep.opened} (mitigated ${ep.by_outcome.mitigated}, escalated ${ep.by_outcome.escalated})`,
    `- Closed: ${ep.closed}`,
    ...(ep.by_service.length === 0
      ? []
      : [
          '',
          ...table(
            ['Service', 'Opened', 'Closed', 'Mitigated', 'Escalated'],
            ep.by_service.map((l) => [e(l.service), `${l.opened}`, `${l.closed}`, `${l.mitigated}`, `${l.escalated}`]),
            [false, true, true, true, true],
          ),
        ]),
  ]);

  section('Times', [
    `- To diagnosis: p50 ${duration(d.times.diagnosis_p50_s)}, p90 ${duration(d.times.diagnosis_p90_s)}`,
    `- To mitigation: p50 ${duration(d.times.mitigation_p50_s)}, p90 ${duration(d.times.mitigation_p90_s)}`,
  ]);

  const a = d.actions;
  section('Actions', [`- Executed ${a.executed}, refused ${a.refused}, failed ${a.failed}, undone ${a.undone}`]);

  const ap = d.approvals;
  section('Approvals', [
    `- Asked ${ap.asked}: approved ${ap.approved}, rejected ${ap.rejected}, expired ${ap.expired}`,
    `- Answered in: p50 ${duration(ap.answer_p50_s)}`,
  ]);

  const g = d.governance;
  section('Governance', [
    '### Autonomy changes',
    '',
    ...(g.autonomy_changes.length === 0
      ? ['None.']
      : g.autonomy_changes.map(
          (c) =>
            `- ${c.at}: ${e(c.service)} from ${e(c.from ?? 'default')} to ${e(c.to ?? 'default')} by ${e(c.by)}${c.approved_by.length === 0 ? '' : `, approved by ${c.approved_by.map(e).join(' and ')}`}: ${e(c.reason)}`,
        )),
    ...leftOut(g.autonomy_changes_left_out, 'autonomy change'),
    '',
    '### Halts',
    '',
    ...(g.halts.length === 0 ? ['None.'] : g.halts.map((h) => `- ${h.at}: ${h.action} by ${e(h.by)}: ${e(h.reason)}`)),
    ...leftOut(g.halts_left_out, 'halt or resume event'),
  ]);

  section(
    'Noisiest alerts',
    d.noisiest_alerts.length === 0
      ? ['None fired.']
      : table(
          ['Alert', 'Service', 'Source', 'Firings', 'Alerts'],
          d.noisiest_alerts.map((n) => [e(n.name), n.service === null ? '(unplaced)' : e(n.service), e(n.source), `${n.firings}`, `${n.alerts}`]),
          [false, false, false, true, true],
        ),
  );

  section(
    'Unplaced alerts',
    d.unplaced_alerts.length === 0
      ? ['None: every alert that fired was placed under a service.']
      : table(
          ['Alert', 'Source', 'Firings', 'Alerts'],
          d.unplaced_alerts.map((n) => [e(n.name), e(n.source), `${n.firings}`, `${n.alerts}`]),
          [false, false, true, true],
        ),
  );

  const st = d.study;
  section(
    'Study',
    st === null
      ? ['No study has finished yet.']
      : [
          `- Finished ${st.finished_at}${st.cut_short ? ' (cut short at its time limit)' : ''}: ${percent(st.provable_share)} of the causes can be proven today`,
          ...(st.holding_now.length === 0
            ? ['- Nothing held with no alert firing.']
            : ['- Holding now with no alert:', ...st.holding_now.map((h) => `  - ${e(h.service)}: ${e(h.cause)}`)]),
        ],
  );

  section(
    'Connectors with problems',
    d.connectors_with_problems.length === 0
      ? ['None.']
      : d.connectors_with_problems.map(
          (c) => `- ${e(c.name)} (${e(c.kind)}): ${e(c.problem ?? 'problem')}${c.last_checked_at === null ? '' : ` (checked ${c.last_checked_at})`}`,
        ),
  );

  const l = d.ledger;
  section('Ledger', [
    `- ${l.ok ? 'Verifies' : `Does NOT verify: ${e(l.problem ?? 'broken')}`} (checked ${l.verified_at})`,
    `- Head: seq ${l.head.seq}, hash \`${l.head.hash}\``,
  ]);
  return `${out.join('\n')}\n`;
}
