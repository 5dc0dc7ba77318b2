import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { ROOT } from '../helpers/cli.ts';

// Every relative link in the repository's Markdown (README.md, docs/, plugins/**/README.md,
// examples/**) names a file or folder that exists, and an anchor names a heading of that file.

/** The Markdown files the test reads, relative to the repository. */
function markdownFiles(): string[] {
  const out = ['README.md'];
  const walk = (dir: string, keep: (name: string) => boolean) => {
    for (const name of readdirSync(path.join(ROOT, dir))) {
      if (name === 'node_modules' || name.startsWith('.')) continue;
      const rel = path.join(dir, name);
      if (statSync(path.join(ROOT, rel)).isDirectory()) walk(rel, keep);
      else if (keep(name)) out.push(rel);
    }
  };
  walk('docs', (n) => n.endsWith('.md'));
  walk('plugins', (n) => n === 'README.md');
  walk('packs', (n) => n === 'README.md');
  walk('examples', (n) => n.endsWith('.md'));
  return out;
}

/** The links of a Markdown text outside code: inline `[text](target)`, images, and `[ref]: target`. */
export function linksOf(markdown: string): string[] {
  const text = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
  const links: string[] = [];
  for (const m of text.matchAll(/!?\[(?:[^\]\n]|\][^(\n])*?\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push(m[1]!);
  for (const m of text.matchAll(/^\s{0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)) links.push(m[1]!);
  return links;
}

/** GitHub's anchors for the headings of a Markdown text. */
export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const text = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** What is wrong with one link of `file`, or null when it is fine or not a repository link. */
export function brokenLink(file: string, link: string, read: (f: string) => string | null = readRepo): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('//')) return null; // http:, https:, mailto:, …
  const [rawPath = '', anchor] = link.split('#', 2);
  const target = rawPath === '' ? file : path.normalize(path.join(path.dirname(file), decodeURIComponent(rawPath)));
  if (target.startsWith('..')) return `${link}: leaves the repository`;
  if (rawPath !== '' && !existsSync(path.join(ROOT, target))) return `${link}: ${target} does not exist`;
  if (anchor !== undefined && anchor !== '' && target.endsWith('.md')) {
    const text = read(target);
    if (text !== null && !anchorsOf(text).has(anchor.toLowerCase())) return `${link}: ${target} has no heading #${anchor}`;
  }
  return null;
}

function readRepo(file: string): string | null {
  try {
    return readFileSync(path.join(ROOT, file), 'utf8');
  } catch {
    return null;
  }
}

test('every relative link in the Markdown of the repository names a file that exists, and its anchor a heading', (t) => {
  const files = markdownFiles();
  t.true(
    files.includes('docs/api.md') && files.includes('examples/alertmanager/README.md') && files.some((f) => f.startsWith('plugins/')),
    'the files named are read',
  );
  const problems: string[] = [];
  let checked = 0;
  for (const file of files) {
    for (const link of linksOf(readRepo(file)!)) {
      checked++;
      const problem = brokenLink(file, link);
      if (problem !== null) problems.push(`${file}: ${problem}`);
    }
  }
  t.true(checked > 50, `only ${checked} links found: the link reader is broken`);
  t.deepEqual(problems, []);
});

test('the checker finds a missing file, a missing anchor and a path out of the repository, and ignores code and URLs', (t) => {
  const md = [
    'See [api](api.md), [gone](missing.md), [cli](cli.md#no-such-heading), [out](../../etc/passwd),',
    '[web](https://example.com/x.md), ![img](nothere.png) and [self](#one-heading).',
    '`[code](not-checked.md)`',
    '```',
    '[fenced](also-not-checked.md)',
    '```',
    '[ref]: ../README.md',
    '## One heading',
  ].join('\n');
  const links = linksOf(md);
  t.deepEqual(links, [
    'api.md',
    'missing.md',
    'cli.md#no-such-heading',
    '../../etc/passwd',
    'https://example.com/x.md',
    'nothere.png',
    '#one-heading',
    '../README.md',
  ]);
  const read = (f: string) => (f === 'docs/x.md' ? md : readRepo(f));
  const broken = links.map((l) => brokenLink('docs/x.md', l, read)).filter((p) => p !== null);
  t.deepEqual(broken, [
    'missing.md: docs/missing.md does not exist',
    'cli.md#no-such-heading: docs/cli.md has no heading #no-such-heading',
    '../../etc/passwd: leaves the repository',
    'nothere.png: docs/nothere.png does not exist',
  ]);
});

test("anchors follow GitHub's rule: lower case, punctuation dropped, spaces to hyphens, repeats numbered", (t) => {
  t.deepEqual(
    [...anchorsOf('# The `doctor` (CLI)\n## connectors list, connectors check\n## Notes\n## Notes\n```\n# not a heading\n```')],
    ['the-doctor-cli', 'connectors-list-connectors-check', 'notes', 'notes-1'],
  );
});
