/**
 * One escaping for every text that leaves the service with words from outside in it: alert
 * names, labels, services, summaries, commit subjects, connector answers, people's names. Each
 * channel takes the form it needs, and every form starts from the same plain line:
 *
 * - {@link plainLine}: one line of plain text (e-mail subjects and headers, the fields of a
 *   webhook or PagerDuty message, one value in a plain-text e-mail);
 * - {@link plainText}: plain text of several lines (the body of an e-mail);
 * - {@link markdownText}: a value inside Markdown (the escalation and approval reports, the
 *   digest), shown literally by any renderer: no raw HTML, no link, no emphasis, no heading;
 * - {@link markdownLink}: a link we make ourselves, only ever to an http(s) address.
 *
 * What goes: terminal escape sequences (ANSI CSI and OSC, so a mail or the CLI cannot recolour,
 * retitle or hide lines in a terminal), control characters (C0, DEL, C1), and the Unicode
 * direction overrides that reorder what a reader sees ("Trojan Source"). Line breaks (CR, LF,
 * VT, FF, NEL, U+2028, U+2029) become spaces in a line, so a value can never start a header or a
 * line of its own. See docs/security.md, "Text that leaves the service".
 */

/** ANSI escape sequences: CSI (`ESC [` … final byte, or the one-byte C1 CSI), OSC (`ESC ]` … BEL or ST), and two-byte `ESC x`. */
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|\x1b[@-_]/g;
/** Line and paragraph breaks of every kind, and tabs. */
const BREAKS = /[\t\n\v\f\r\x85\u2028\u2029]/g;
/** What is left of control characters (C0, DEL, C1), and the direction overrides and isolates. */
const CONTROLS = /[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function stripped(s: string): string {
  return (s.isWellFormed() ? s : s.toWellFormed()).replace(ANSI, '');
}

/** One line of plain text: escape sequences and control characters gone, breaks and runs of space as one space, trimmed. */
export function plainLine(s: string): string {
  return stripped(s).replace(BREAKS, ' ').replace(CONTROLS, '').replace(/ {2,}/g, ' ').trim();
}

/** Plain text of several lines: line breaks become `\n`, tabs stay, escape sequences and other control characters go. */
export function plainText(s: string): string {
  return stripped(s)
    .replace(/\r\n?|[\v\f\x85\u2028\u2029]/g, '\n')
    .replace(CONTROLS, '');
}

/**
 * A value inside Markdown, shown literally: one plain line whose characters that can format,
 * link, open HTML or an entity, or end a table cell are backslash-escaped (CommonMark's escape),
 * so `<img …>` and `[x](javascript:…)` stay text under any renderer, even one that allows HTML;
 * a value that starts a line cannot make it a heading, a quote, a list item or a rule either.
 */
export function markdownText(s: string): string {
  return plainLine(s)
    .replace(/[\\`*_[\]<>&|~]/g, (c) => `\\${c}`)
    .replace(/^([#>+=-])/, '\\$1')
    .replace(/^(\d+)([.)])/, '$1\\$2');
}

/** A link in Markdown: the text escaped, the address only when it is http(s) (else the text alone); `(`, `)` and spaces in it percent-encoded. */
export function markdownLink(text: string, url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return markdownText(text);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return markdownText(text);
  return `[${markdownText(text)}](${parsed.href.replace(/[()\s<>]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)})`;
}
