import type { Episode } from '../episodes/episode.repo.ts';
import type { Findings } from '../investigation/findings.repo.ts';
import type { ActionPath } from './paths.repo.ts';

/**
 * The escalation as Markdown: the diagnosis, what the service proposed, decided and did, and why
 * the path ended without a mitigation. It is the body of the e-mail to the owner and approvers,
 * and `report` of the episode's notifications.
 */
export function escalationReport(d: { episode: Episode; findings: Findings | null; path: ActionPath; why: string; publicUrl: string | null }): string {
  const { episode, findings, path } = d;
  const lines: string[] = [`# Escalated: ${episode.service}`, '', `**Why people are needed:** ${d.why}`, ''];
  lines.push(`- Episode: ${episode.id}${d.publicUrl === null ? '' : ` (${d.publicUrl}/episodes/${encodeURIComponent(episode.id)})`}`);
  lines.push(`- Opened: ${episode.t_open}`, `- Alerts: ${episode.alerts.join(', ') || '(none named)'}`, '');
  lines.push('## Diagnosis', '', findings?.diagnosis?.summary ?? 'No diagnosis.', '');
  for (const v of findings?.verdicts ?? []) {
    if (v.verdict === 'holds') lines.push(`- **holds** ${v.cause}: ${v.reason}`);
  }
  const unknown = (findings?.verdicts ?? []).filter((v) => v.verdict === 'unknown');
  if (unknown.length > 0) lines.push('', 'Could not be checked:', ...unknown.map((v) => `- ${v.cause}: ${v.obstacle ?? 'unknown'}: ${v.reason}`));
  lines.push('', '## What was done', '');
  const p = path.proposal as { action?: string; connector?: string; why?: string } | null;
  const pd = path.policy_decision as { decision?: string; reason?: string } | null;
  lines.push(p === null ? '- Nothing was proposed.' : `- Proposed: ${p.action} via ${p.connector} (${p.why ?? ''})`);
  if (pd !== null) lines.push(`- Decision: ${pd.decision}: ${pd.reason ?? ''}`);
  const r = path.rehearsal as { ok?: boolean; shown?: string; problem?: string } | null;
  if (r !== null) lines.push(`- Rehearsal: ${r.ok === true ? `ok: ${r.shown ?? ''}` : `failed: ${r.problem ?? ''}`}`);
  const a = path.action as { ok?: boolean; shown?: string; problem?: string; kind?: string } | null;
  lines.push(a === null ? '- No action was taken.' : `- Action ${a.kind ?? ''}: ${a.ok === true ? `done: ${a.shown ?? ''}` : `failed: ${a.problem ?? ''}`}`);
  const ver = path.verification as { verdict?: string; alerts_resolved?: boolean } | null;
  if (ver !== null)
    lines.push(`- Verification: the check is ${ver.verdict ?? 'not known'}; alerts ${ver.alerts_resolved === true ? 'resolved' : 'still firing'}`);
  return `${lines.join('\n')}\n`;
}
