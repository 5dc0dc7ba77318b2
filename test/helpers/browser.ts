import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';
import axe from 'axe-core';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { testNeeding } from './needs.ts';

/**
 * Debian's Chromium (`apt-get install chromium`), driven by playwright-core. No browser is ever
 * downloaded at run time: without this file the browser tests are skipped (failed under CI=true).
 */
export const CHROMIUM = process.env.TEST_CHROMIUM ?? '/usr/bin/chromium';

/** Where screenshots go (git-ignored). */
export const ARTIFACTS = fileURLToPath(new URL('../artifacts/', import.meta.url));

const missing = existsSync(CHROMIUM) ? null : `no Chromium at ${CHROMIUM} (apt-get install chromium)`;

/** One headless Chromium per test file, launched on first use and closed when the file ends. */
let launched: Promise<Browser> | null = null;
export function browser(): Promise<Browser> {
  launched ??= chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Chromium's sandbox cannot start as root (containers, CI): it refuses to run without this.
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
  return launched;
}

export async function closeBrowser(): Promise<void> {
  if (launched === null) return;
  const b = await launched.catch(() => null);
  launched = null;
  await b?.close();
}

export interface BrowserPage {
  page: Page;
  context: BrowserContext;
  /** Uncaught page errors and Content-Security-Policy refusals seen so far: a test expects none. */
  problems: string[];
}

/** A fresh context (own sessionStorage) and page, closed after the test. */
export async function openPage(t: ExecutionContext): Promise<BrowserPage> {
  const context = await (await browser()).newContext({ viewport: { width: 1100, height: 800 }, locale: 'en-GB' });
  t.teardown(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) problems.push(`CSP: ${msg.text()}`);
  });
  return { page, context, problems };
}

/**
 * A test that drives the browser; skipped with the reason when Chromium is absent (failed under
 * CI=true, which must run it).
 */
export function browserTest(title: string, fn: (t: ExecutionContext) => Promise<void>): void {
  testNeeding(missing, title, fn);
}

/** Saves a full-page PNG as `test/artifacts/<name>.png` and returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = join(ARTIFACTS, `${name.replace(/[^\w.-]+/g, '-')}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/**
 * Runs axe-core on the page as it is now and fails the test on any `serious` or `critical`
 * violation, naming each rule and the elements it found. The script goes in through the
 * DevTools protocol (page.evaluate), so the console's CSP stays on.
 */
export async function checkA11y(t: ExecutionContext, page: Page, where: string): Promise<void> {
  const present = await page.evaluate('typeof window.axe === "object"');
  if (present !== true) await page.evaluate(axe.source);
  const violations = (await page.evaluate(async () => {
    const found = await (globalThis as any).axe.run((globalThis as any).document, { resultTypes: ['violations'] });
    return found.violations.map((v: any) => ({ id: v.id, impact: v.impact ?? null, help: v.help, nodes: v.nodes.map((n: any) => ({ target: n.target })) }));
  })) as Violation[];
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  for (const v of violations.filter((x) => !bad.includes(x)))
    t.log(`axe (${where}), ${v.impact}: ${v.id} at ${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')}`);
  t.deepEqual(
    bad.map((v) => `${v.impact} ${v.id} (${v.help}) at ${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')}`),
    [],
    `axe found serious or critical violations on ${where}`,
  );
}

/**
 * Signs the context in with a session token the test already holds (e.g. from `signedIn` in
 * people.ts): the token goes into the console's sessionStorage key before any page script runs,
 * on the service's origin only, as the sign-in page would have left it.
 */
export async function withSession(bp: BrowserPage, base: string, token: string): Promise<void> {
  await bp.context.addInitScript(
    ([origin, value]) => {
      const w = globalThis as any; // the page's window (no DOM types in the root tsconfig)
      try {
        if (w.location.origin === origin && w.sessionStorage.getItem('oncall.session') === null) w.sessionStorage.setItem('oncall.session', value);
      } catch {
        /* about:blank and other origins have no storage for us */
      }
    },
    [new URL(base).origin, token] as const,
  );
}

/** A fresh browser context signed in with `token` on the service at `base`. */
export async function browserAs(t: ExecutionContext, base: string, token: string): Promise<BrowserPage> {
  const bp = await openPage(t);
  await withSession(bp, base, token);
  return bp;
}

/** The page as it is: a screenshot in test/artifacts/, then axe. */
export async function visited(t: ExecutionContext, bp: BrowserPage, name: string): Promise<void> {
  t.log(`screenshot: ${await screenshot(bp.page, name)}`);
  await checkA11y(t, bp.page, name);
}

/** The page's one top-level heading named `name`. */
export const heading = (bp: BrowserPage, name: string | RegExp) => bp.page.getByRole('heading', { level: 1, name });

// The console build the browser tests need, shared by the e2e files.

const WEB_DIR = fileURLToPath(new URL('../../web/', import.meta.url));

/**
 * The host serves web/dist (host/http/console.ts). `npm install` builds it; when it is missing,
 * or older than web/src, it is built here first (as `npm run build:web` would: production), in a
 * temporary folder and then copied in, so other test files serving web/dist never see it broken.
 * (fs, os, vite and the host's CONSOLE_DIST are imported here, on first use, so test files that
 * need no build load none of them.)
 */
let consoleReady: Promise<void> | null = null;
export function consoleBuilt(): Promise<void> {
  consoleReady ??= (async () => {
    const { cpSync, mkdtempSync, readdirSync, rmSync, statSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { build } = await import('vite');
    const { CONSOLE_DIST } = await import('../../host/http/console.ts');
    const newest = (dir: string): number => {
      let latest = 0;
      for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
        if (entry.isFile()) latest = Math.max(latest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
      }
      return latest;
    };
    const index = join(CONSOLE_DIST, 'index.html');
    const stale = !existsSync(index) || statSync(index).mtimeMs < Math.max(newest(join(WEB_DIR, 'src')), statSync(join(WEB_DIR, 'index.html')).mtimeMs);
    if (!stale) return;
    const tmp = mkdtempSync(join(tmpdir(), 'oncall-console-e2e-'));
    const env = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production'; // ava's NODE_ENV=test would make a development build
    try {
      await build({
        configFile: join(WEB_DIR, 'vite.config.ts'),
        mode: 'production',
        logLevel: 'silent',
        build: { outDir: join(tmp, 'dist'), emptyOutDir: true },
      });
      // New files first and index.html last, then the old build's leftovers: at no moment does
      // web/dist lack index.html or a file its index.html names.
      const fresh = join(tmp, 'dist');
      const names = readdirSync(fresh, { recursive: true, encoding: 'utf8' });
      for (const name of names) if (name !== 'index.html') cpSync(join(fresh, name), join(CONSOLE_DIST, name), { recursive: true });
      cpSync(join(fresh, 'index.html'), index);
      const keep = new Set(names);
      if (existsSync(join(CONSOLE_DIST, 'assets'))) {
        for (const name of readdirSync(join(CONSOLE_DIST, 'assets')))
          if (!keep.has(join('assets', name))) rmSync(join(CONSOLE_DIST, 'assets', name), { force: true });
      }
    } finally {
      if (env === undefined) delete process.env.NODE_ENV;
      else process.env.NODE_ENV = env;
      rmSync(tmp, { recursive: true, force: true });
    }
  })();
  return consoleReady;
}
