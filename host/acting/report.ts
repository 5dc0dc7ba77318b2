import type { Episode } from '../episodes/episode.model.ts';
import { markdownLink, markdownText as m } from '../escape.ts';
import type { Findings } from '../investigation/findings.model.ts';
import type { ActionPath } from './paths.model.ts';
import type { Proposal } from './proposal.ts';

/** The episode's page in the console, as a Markdown link, or its id alone without SERVICE_PUBLIC_URL. */
function episodeLink(publicUrl: string | null, id: string): string {
  return publicUrl === null ? m(id) : `${m(id)} (${markdownLink('in the console', `${publicUrl}/episodes/${encodeURIComponent(id)}`)})`;
}

/**
 * The escalation as Markdown: the diagnosis, what the service proposed, decided and did, and why
 * the path ended without a mitigation. It is the body of the e-mail to the owner and approvers,
 * and `report` of the episode's notifications. Every value in it is escaped (host/escape.ts):
 * alert names, causes' reasons, connector answers and the proposal come from outside.
 */
export function escalationReport(d: { episode: Episode; findings: Findings | null; path: ActionPath; why: string; publicUrl: string | null }): string {
  const { episode, findings, path } = d;
  const lines: string[] = [`# Escalated: ${m(episode.service)}`, '', `**Why people are needed:** ${m(d.why)}`, ''];
  lines.push(`- Episode: ${episodeLink(d.publicUrl, episode.id)}`);
  lines.push(`- Opened: ${m(episode.t_open)}`, `- Alerts: ${episode.alerts.map(m).join(', ') || '(none named)'}`, '');
  lines.push('## Diagnosis', '', m(findings?.diagnosis?.summary ?? 'No diagnosis.'), '');
  for (const v of findings?.verdicts ?? []) {
    if (v.verdict === 'holds') lines.push(`- **holds** ${m(v.cause)}: ${m(v.reason)}`);
  }
  const unknown = (findings?.verdicts ?? []).filter((v) => v.verdict === 'unknown');
  if (unknown.length > 0) lines.push('', 'Could not be checked:', ...unknown.map((v) => `- ${m(v.cause)}: ${m(v.obstacle ?? 'unknown')}: ${m(v.reason)}`));
  lines.push('', '## What was done', '');
  const p = path.proposal as { action?: string; connector?: string; why?: string } | null;
  const pd = path.policy_decision as { decision?: string; reason?: string } | null;
  lines.push(p === null ? '- Nothing was proposed.' : `- Proposed: ${m(p.action ?? '')} via ${m(p.connector ?? '')} (${m(p.why ?? '')})`);
  if (pd !== null) lines.push(`- Decision: ${m(pd.decision ?? '')}: ${m(pd.reason ?? '')}`);
  const r = path.rehearsal as { ok?: boolean; shown?: string; problem?: string } | null;
  if (r !== null) lines.push(`- Rehearsal: ${r.ok === true ? `ok: ${m(r.shown ?? '')}` : `failed: ${m(r.problem ?? '')}`}`);
  const a = path.action as { ok?: boolean; shown?: string; problem?: string; kind?: string } | null;
  lines.push(
    a === null ? '- No action was taken.' : `- Action ${m(a.kind ?? '')}: ${a.ok === true ? `done: ${m(a.shown ?? '')}` : `failed: ${m(a.problem ?? '')}`}`,
  );
  const ver = path.verification as { verdict?: string; alerts_resolved?: boolean } | null;
  if (ver !== null)
    lines.push(`- Verification: the check is ${m(ver.verdict ?? 'not known')}; alerts ${ver.alerts_resolved === true ? 'resolved' : 'still firing'}`);
  return `${lines.join('\n')}\n`;
}

/** The approval e-mail's body, as Markdown: what would run, why, the evidence in short, and where to decide. */
export function approvalReport(summary: string, p: Proposal, findings: Findings, publicUrl: string | null, episodeId: string): string {
  const top = findings.verdicts.find((v) => v.cause === p.cause);
  const evidence = (top?.evidence ?? [])
    .map((id) => findings.evidence.find((e) => e.id === id))
    .filter((e) => e !== undefined)
    .slice(0, 5)
    .map((e) => `- ${m(e.source)}: ${m(e.query)} @ ${m(e.at)}: ${m(e.excerpt)}`);
  return [
    `Approval needed: ${m(summary)}`,
    '',
    `Diagnosis: ${m(findings.diagnosis?.summary ?? 'none')}`,
    ...(evidence.length === 0 ? [] : ['', 'Evidence:', ...evidence]),
    '',
    `Parameters: ${m(JSON.stringify(p.params))}`,
    `Undo: ${m(p.undo)}`,
    `Verified by: ${m(p.verify.cause)} expected ${p.verify.expect} after ${p.verify.after_s} s`,
    '',
    `Approve or reject it in the console${publicUrl === null ? '' : `: ${markdownLink(`episode ${episodeId}`, `${publicUrl}/episodes/${encodeURIComponent(episodeId)}`)}`} (within 30 minutes).`,
  ].join('\n');
}
