// host/escape.ts: the one escaping of every text that leaves the service (issue 22, item 11).
import test from 'ava';
import MarkdownIt from 'markdown-it';
import { markdownLink, markdownText, plainLine, plainText } from '../../host/escape.ts';

test('a plain line loses line breaks, terminal escapes, control characters and direction overrides, and keeps the words', (t) => {
  t.is(plainLine('a\r\nBcc: x@evil.example\nc'), 'a Bcc: x@evil.example c');
  t.is(plainLine('\x1b[31mred\x1b[0m \x1b]0;title\x07ok \x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\'), 'red ok link');
  t.is(plainLine('nul\x00 bel\x07 del\x7f c1\x9b31m csi'), 'nul bel del c1 csi');
  t.is(plainLine('file\u202Efdp.exe \u2066iso\u2069'), 'filefdp.exe iso');
  t.is(plainLine('line\u2028sep\u2029para\x85nel\vvt\fff\ttab'), 'line sep para nel vt ff tab');
  t.is(plainLine('  checkout-api.v2 / HighErrorRate  '), 'checkout-api.v2 / HighErrorRate', 'ordinary names are unchanged');
  t.is(plainLine('half \ud800 surrogate'), 'half \ufffd surrogate');
});

test('plain text keeps its lines and tabs and loses the rest', (t) => {
  t.is(plainText('one\r\ntwo\rthree\u2028four\n\tfive\x1b[2J\x07'), 'one\ntwo\nthree\nfour\n\tfive');
});

test('Markdown text shows any value literally: no HTML, no link, no image, no emphasis, no block from a line start', (t) => {
  const md = new MarkdownIt({ html: true, linkify: true });
  for (const hostile of [
    '<img src=x onerror=alert(1)>',
    '[click](javascript:alert(1))',
    '![x](data:text/html;base64,PHNjcmlwdD4=)',
    '<javascript:alert(1)>',
    '# heading',
    '> quote',
    '- item',
    '1. item',
    '===',
    '*bold* _it_ `code` ~~del~~ a|b &amp;',
    'two\n\n<script>alert(1)</script>',
  ]) {
    const html = md.render(markdownText(hostile)).trim();
    t.regex(html, /^<p>[^<]*<\/p>$/, `${JSON.stringify(hostile)} → ${html}`);
  }
  t.is(markdownText('checkout-api.v2'), 'checkout-api.v2', 'ordinary names stay readable');
});

test('a Markdown link is made only to an http(s) address', (t) => {
  t.is(markdownLink('the console', 'https://oncall.bank.example/episodes/a b(c)'), '[the console](https://oncall.bank.example/episodes/a%20b%28c%29)');
  t.is(markdownLink('x', 'javascript:alert(1)'), 'x');
  t.is(markdownLink('x', 'data:text/html,hi'), 'x');
  t.is(markdownLink('x', 'not a url'), 'x');
  t.is(markdownLink('<b>', 'http://h.example/'), '[\\<b\\>](http://h.example/)');
});
