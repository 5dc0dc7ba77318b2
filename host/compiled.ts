/**
 * How the host's own modules run: as TypeScript from a checkout (`node host/main.ts`, through
 * Node's type stripping), or as the JavaScript the release package ships compiled
 * (`node --no-experimental-strip-types host/main.js`; bin/compile.js, docs/install.md). Files
 * the host finds by name rather than by import, its migrations and the plugins' entries, are
 * looked up in the same form.
 */

/** `.ts` in a checkout, `.js` in the release package: this module's own extension. */
export const MODULE_EXT: '.ts' | '.js' = import.meta.url.endsWith('.js') ? '.js' : '.ts';

/** The file a TypeScript module is compiled to: `x.ts` → `x.js`, `.mts` → `.mjs`, `.cts` → `.cjs`; null for any other name. */
export function compiledName(file: string): string | null {
  return /\.[mc]?ts$/.test(file) ? file.replace(/ts$/, 'js') : null;
}
