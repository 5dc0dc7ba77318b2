import type { ChangeEvent, CauseDefinition, CheckAnswer, CheckContext, Commit, EvidenceInput, Remedy, TextLibrary } from '../../../host/plugins/contract.ts';
import { minutesBefore, shownTime } from '../words.ts';

/** The ledger events that are changes to a service. */
const CHANGE_EVENTS = new Set(['human.deploy', 'human.action']);
/** Commits or events listed in one evidence item (the count says how many there were). */
const MAX_LISTED = 20;
/** Event data copied into a runbook remedy's parameters, when present. */
const RUNBOOK_FIELDS = ['pipeline', 'runbook', 'run', 'version', 'previous_version', 'environment'] as const;
/** Event data that name the commit a deploy shipped (a full or abbreviated sha). */
const COMMIT_FIELDS = ['commit', 'sha', 'revision'] as const;

type Cut = TextLibrary['cut'];

type Change = { kind: 'commit'; at: string; commit: Commit } | { kind: 'event'; at: string; event: ChangeEvent };

/**
 * `core/recent-change`: a commit to a repository linked to the service, or a `human.deploy` /
 * `human.action` event for it, in the `window_minutes` before the episode opened. A change is a
 * cause, not a symptom: it ranks high. See README.md.
 */
export const recentChange: CauseDefinition = {
  id: 'core/recent-change',
  title: 'Recent change to the service',
  specificity: 80,
  applies: { always: true },
  reads: ['changes'],
  settings: { window_minutes: 60 },
  check,
};

async function check(ctx: CheckContext): Promise<CheckAnswer> {
  const { cut } = ctx.lib.text;
  const w = ctx.settings.window_minutes;
  const minutes = typeof w === 'number' && w > 0 ? w : 60;
  // From the window before the opening up to the run's moment (for a re-run, the newest signal).
  const opened = ctx.episode.opened_at;
  const until = Date.parse(ctx.at) > Date.parse(opened) ? ctx.at : opened;
  const since = new Date(Date.parse(opened) - minutes * 60_000).toISOString();
  const inWindow = (at: string) => Date.parse(at) >= Date.parse(since) && Date.parse(at) <= Date.parse(until);
  const found = await ctx.changes.since(since, until);
  const newestFirst = (a: { at: string }, b: { at: string }) => Date.parse(b.at) - Date.parse(a.at);
  const commits = found.commits.filter((c) => inWindow(c.at)).sort(newestFirst);
  const events = found.events.filter((e) => CHANGE_EVENTS.has(e.type) && inWindow(e.at)).sort(newestFirst);
  const evidence = [...commitEvidence(ctx, commits, since, until, found.gaps), ...eventEvidence(ctx, events, since, until, found.gaps)];
  const window =
    until === opened
      ? `the ${minutes} minutes before the episode opened (${shownTime(since)} to ${shownTime(until)})`
      : `the ${minutes} minutes before the episode opened and since (${shownTime(since)} to ${shownTime(until)})`;
  const gaps = found.gaps.map((g) => `${g.source}: ${g.problem}`).join('; ');

  const changes: Change[] = [
    ...commits.map((c): Change => ({ kind: 'commit', at: c.at, commit: c })),
    ...events.map((e): Change => ({ kind: 'event', at: e.at, event: e })),
  ].sort(newestFirst);
  const latest = changes[0];
  if (latest !== undefined) {
    const more = changes.length > 1 ? ` It is the latest of ${changes.length} changes in the ${minutes} minutes before.` : '';
    const unread = gaps === '' ? '' : ` Not read: ${gaps}.`;
    const remedy = remedyFor(cut, latest, commits, ctx.service.links);
    return {
      verdict: 'holds',
      reason: `${describe(cut, latest)}, ${minutesBefore(latest.at, opened)} the episode opened.${more}${unread}${'none' in remedy ? ` No remedy is proposed: ${remedy.none}.` : ''}`,
      evidence,
      // A deploy changed what runs for certain; a commit may not have been deployed yet.
      strength: events.some((e) => e.type === 'human.deploy') ? 1 : 0.8,
      ...('none' in remedy ? {} : { remedy }),
    };
  }
  const firstGap = found.gaps[0];
  if (firstGap !== undefined)
    return {
      verdict: 'unknown',
      obstacle: firstGap.obstacle,
      reason: `No change found in ${window}, but not everything could be read: ${gaps}.`,
      evidence,
    };
  return { verdict: 'ruled_out', reason: `No commit to a linked repository and no deploy or action for ${ctx.service.name} in ${window}.`, evidence };
}

/** The change in words: `commit 1a2b3c4 "subject" by Ann to git-orders (services/orders)`. */
function describe(cut: Cut, c: Change): string {
  if (c.kind === 'commit') {
    const where = c.commit.path === '.' ? c.commit.source : `${c.commit.source} (${c.commit.path})`;
    return `Commit ${c.commit.sha.slice(0, 12)} "${cut(c.commit.subject, 120)}" by ${cut(c.commit.author, 80)} to ${where}`;
  }
  const e = c.event;
  const pipeline = typeof e.data.pipeline === 'string' ? ` from pipeline ${cut(e.data.pipeline, 80)}` : '';
  const why = e.reason === null ? '' : ` ("${cut(e.reason, 120)}")`;
  return `${e.type === 'human.deploy' ? 'Deploy' : 'Action'}${pipeline} by ${cut(e.actor, 80)}${why}, ledger event ${e.seq}${recorder(cut, e)}`;
}

/** Who recorded the event, when a caller did (POST /v1/events with the ingest token): the claim is theirs. */
function recorder(cut: Cut, e: ChangeEvent): string {
  return e.recorded_by === undefined || e.recorded_by === null ? '' : ` recorded by a caller (${cut(e.recorded_by, 40)})`;
}

/**
 * What undoes the latest change: a revert of a commit; the runbook of the pipeline a deploy came
 * from; nothing for a change made by hand (the diagnosis points at it, a person undoes it).
 */
function remedyFor(cut: Cut, c: Change, commits: Commit[], links: CheckContext['service']['links']): Remedy | { none: string } {
  if (c.kind === 'commit') return revertOf(c.commit.source, c.commit.sha, c.commit.path);
  const data = c.event.data;
  const text = (k: string) => (typeof data[k] === 'string' && (data[k] as string).trim() !== '' ? (data[k] as string).trim() : null);
  // A deploy that names the commit it shipped: that commit's revert, found in a linked repository
  // (or, with one repository linked, the full sha named), comes first.
  const sha = COMMIT_FIELDS.map(text)
    .find((v): v is string => v !== null && /^[0-9a-f]{7,40}$/i.test(v))
    ?.toLowerCase();
  if (sha !== undefined) {
    const found = commits.find((x) => x.sha.toLowerCase().startsWith(sha));
    if (found !== undefined) return revertOf(found.source, found.sha, found.path);
    const repos = links.filter((l) => l.kind === 'repository' && l.connector !== undefined);
    if (sha.length === 40 && repos.length === 1) return revertOf(repos[0]!.connector!, sha, repos[0]!.path ?? '.');
  }
  const runbook = text('runbook') ?? text('pipeline');
  if (runbook !== null) {
    const params: Record<string, unknown> = { name: runbook, event: c.event.seq };
    for (const k of RUNBOOK_FIELDS) if (typeof data[k] === 'string' || typeof data[k] === 'number') params[k] = data[k];
    return { action: 'runbook', params, undo: 'run the pipeline again for the version it rolled back' };
  }
  if (sha !== undefined) return { none: `the ${c.event.type} names commit ${sha.slice(0, 12)}, which no linked repository holds, and no pipeline or runbook` };
  return { none: `the ${c.event.type} by ${cut(c.event.actor, 80)} names no commit, pipeline or runbook: a person undoes what a person did` };
}

/** The revert of a commit through the connector that read it; the whole repository's folder (`.`) is no `path`. */
function revertOf(connector: string, sha: string, path: string): Remedy {
  return { action: 'revert', params: { connector, sha, ...(path === '.' || path === '' ? {} : { path }) }, undo: 'revert the revert commit' };
}

/** One item per linked repository read (and per source the reader answered from), listing its commits. */
function commitEvidence(ctx: CheckContext, commits: Commit[], since: string, until: string, gaps: Array<{ source: string }>): EvidenceInput[] {
  const { cut } = ctx.lib.text;
  const groups = new Map<string, { source: string; path: string; commits: Commit[] }>();
  for (const l of ctx.service.links)
    if (l.kind === 'repository' && l.connector !== undefined && !gaps.some((g) => g.source === l.connector))
      groups.set(`${l.connector}\n${l.path ?? '.'}`, { source: l.connector, path: l.path ?? '.', commits: [] });
  for (const c of commits) {
    const key = `${c.source}\n${c.path}`;
    const g = groups.get(key) ?? { source: c.source, path: c.path, commits: [] };
    g.commits.push(c);
    groups.set(key, g);
  }
  return [...groups.values()].map((g) => ({
    source: g.source,
    kind: 'commits',
    query: `git log --since=${since} --until=${until}${g.path === '.' ? '' : ` -- ${g.path}`}`,
    at: until,
    observed: {
      count: g.commits.length,
      commits: g.commits.slice(0, MAX_LISTED).map((c) => ({ sha: c.sha, at: c.at, author: cut(c.author, 80), subject: cut(c.subject, 200) })),
    },
    excerpt:
      g.commits.length === 0
        ? `No commit to ${g.path === '.' ? g.source : `${g.path} of ${g.source}`} in the window.`
        : `${g.commits.length} commit${g.commits.length === 1 ? '' : 's'} to ${g.path === '.' ? g.source : `${g.path} of ${g.source}`}; the latest ${g.commits[0]!.sha.slice(0, 12)} "${cut(g.commits[0]!.subject, 120)}" at ${shownTime(g.commits[0]!.at)}.`,
  }));
}

/** The deploy and action events of the window (none when the ledger could not be read). */
function eventEvidence(ctx: CheckContext, events: ChangeEvent[], since: string, until: string, gaps: Array<{ source: string }>): EvidenceInput[] {
  const { cut } = ctx.lib.text;
  if (gaps.some((g) => g.source === 'ledger')) return [];
  const latest = events[0];
  return [
    {
      source: 'ledger',
      kind: 'deploys',
      query: `ledger events human.deploy, human.action of ${ctx.service.name} from ${since} to ${until}`,
      at: until,
      observed: {
        count: events.length,
        events: events.slice(0, MAX_LISTED).map((e) => ({
          seq: e.seq,
          type: e.type,
          at: e.at,
          actor: e.actor,
          recorded_by: e.recorded_by ?? null,
          reason: e.reason,
          data: smallData(cut, e.data),
        })),
      },
      excerpt:
        latest === undefined
          ? `No deploy or action for ${ctx.service.name} in the window.`
          : `${events.length} deploy or action event${events.length === 1 ? '' : 's'}; the latest ${latest.type} by ${cut(latest.actor, 80)} at ${shownTime(latest.at)}${recorder(cut, latest)}.`,
    },
  ];
}

/** An event's data kept small for evidence: plain values only, texts cut, at most 12 fields. */
function smallData(cut: Cut, data: Record<string, unknown>): Record<string, string | number | boolean | null> {
  const out: Record<string, string | number | boolean | null> = {};
  for (const [k, v] of Object.entries(data).slice(0, 12))
    if (typeof v === 'string') out[k] = cut(v, 200);
    else if (typeof v === 'number' || typeof v === 'boolean' || v === null) out[k] = v;
  return out;
}
