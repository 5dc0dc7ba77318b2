import ignore from 'ignore';
import { entryAt, readBlob, type Repo } from './repo.ts';

/** CODEOWNERS: where it is looked for, its rules, and which rule owns a path. */

/** Where CODEOWNERS is looked for, in GitHub's order (then GitLab's). */
export const CODEOWNERS_PATHS = ['.github/CODEOWNERS', 'CODEOWNERS', 'docs/CODEOWNERS', '.gitlab/CODEOWNERS'];

export interface CodeownersEntry {
  line: number;
  pattern: string;
  owners: string[];
}

/** The CODEOWNERS rules: pattern and owners per line; comments, blank lines and GitLab sections skipped. */
export function parseCodeowners(text: string): CodeownersEntry[] {
  const out: CodeownersEntry[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (line === '' || /^\^?\[[^\]]*\]/.test(line)) return;
    const parts = line.split(/\s+/).map((p) => p.replace(/\\#/g, '#'));
    const pattern = parts[0]!;
    out.push({ line: i + 1, pattern, owners: parts.slice(1).filter((o) => o.includes('@')) });
  });
  return out;
}

/**
 * Whether a CODEOWNERS pattern covers a path (a file, or a folder given without its slash).
 * CODEOWNERS patterns are gitignore patterns (without negation), matched by the `ignore`
 * package, which implements gitignore's rules.
 */
export function codeownersMatch(pattern: string, p: string): boolean {
  const pat = pattern.trim();
  if (pat === '' || pat.startsWith('!')) return false;
  const rule = ignore({ allowRelativePaths: true }).add(pat);
  return rule.ignores(p) || rule.ignores(`${p}/`);
}

/** The owners of a path: the last matching rule wins, as in GitHub and GitLab. */
export function ownersOf(rules: CodeownersEntry[], p: string): { owners: string[]; line: number } | null {
  for (let i = rules.length - 1; i >= 0; i--) if (codeownersMatch(rules[i]!.pattern, p)) return { owners: rules[i]!.owners, line: rules[i]!.line };
  return null;
}

export async function readCodeowners(repo: Repo, maxBytes: number): Promise<{ path: string; rules: CodeownersEntry[]; truncated: boolean } | null> {
  for (const p of CODEOWNERS_PATHS) {
    const e = await entryAt(repo, p);
    if (e === null || e.type !== 'blob') continue;
    const { text, truncated } = await readBlob(repo, e, maxBytes);
    return { path: p, rules: text === null ? [] : parseCodeowners(text), truncated };
  }
  return null;
}
