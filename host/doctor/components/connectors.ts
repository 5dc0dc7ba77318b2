/** The connectors component of doctor: what it reads and how it judges it. */
import { part, plural, type Part } from '../part.ts';

/** What doctor reads of the connectors (ConnectorService.list() fits as it is). */
export interface ConnectorsSeen {
  connectors: ReadonlyArray<{ name: string; kind: string; state: 'ok' | 'problem' | 'unchecked'; last_problem: string | null; last_checked_at: string | null }>;
  file: { path: string; problem: string | null } | null;
}

export function describeConnectors(seen: ConnectorsSeen): Part {
  const fileProblem = seen.file?.problem ?? null;
  if (fileProblem !== null)
    return part('fail', `connectors.json (${seen.file!.path}): ${fileProblem}`, 'correct connectors.json in SERVICE_CONFIG_DIR and restart');
  if (seen.connectors.length === 0)
    return part(
      'warn',
      'no connectors configured: nothing can be investigated',
      'add one in the console or with PUT /v1/connectors/{name} (docs/connectors.md)',
    );
  const bad = seen.connectors.filter((c) => c.state === 'problem');
  const unchecked = seen.connectors.filter((c) => c.state === 'unchecked');
  const counts = `${plural(seen.connectors.length, 'connector')}: ${seen.connectors.length - bad.length - unchecked.length} ok, ${bad.length} with a problem, ${unchecked.length} unchecked`;
  if (bad.length > 0) {
    return part(
      'fail',
      `${counts}; ${bad.map((c) => `${c.name} (${c.kind}): ${c.last_problem ?? 'problem'}`).join('; ')}`,
      `fix the settings or the system they reach, then POST /v1/connectors/{name}/check (or \`oncall connectors check <name>\`)`,
    );
  }
  if (unchecked.length > 0)
    return part(
      'warn',
      `${counts}; not checked yet: ${unchecked.map((c) => c.name).join(', ')}`,
      'check them: POST /v1/connectors/{name}/check (or `oncall connectors check <name>`)',
    );
  return part('ok', counts);
}
