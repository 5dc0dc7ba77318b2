/**
 * `bench:act --path unasked`: a vendor connector kind `bench-runbook`, in a throwaway
 * SERVICE_PLUGINS_DIR, that is the shipped `http` connector (its files copied unchanged) with its
 * `runbook` action declared **reversible** and an `undo` that has nothing to undo.
 *
 * Why: the shipped `runbook` is declared not reversible, and the acting path never takes an
 * irreversible action without approval, even at L2 with `runbook` in `safe_for_l2`
 * (host/acting/policy-decision.ts). The figure is for a runbook that runs unasked at L2;
 * this kind measures exactly that path (no approval step) with the same request code, so the
 * two runs differ only in the approval the shipped declaration asks for.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The vendor kind's name (plugin.json `name`), used as a connector's `kind`. */
export const VENDOR_KIND = 'bench-runbook';

const HTTP_CONNECTOR = fileURLToPath(new URL('../../plugins/connectors/http/', import.meta.url));

interface Manifest {
  name: string;
  description: string;
  entry: string;
  actions: { runbook: { reversible: boolean; description: string } };
}

/** Writes the vendor folder; answers the plugins dir (for SERVICE_PLUGINS_DIR) and its removal. */
export function vendorPluginsDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oncall-bench-act-plugins-'));
  const folder = path.join(dir, VENDOR_KIND);
  cpSync(HTTP_CONNECTOR, folder, { recursive: true });
  const manifest = JSON.parse(readFileSync(path.join(folder, 'plugin.json'), 'utf8')) as Manifest;
  manifest.name = VENDOR_KIND;
  manifest.description = `bench:act only: the shipped http connector with its runbook declared reversible. ${manifest.description}`;
  manifest.entry = 'entry.mjs';
  manifest.actions.runbook.reversible = true;
  manifest.actions.runbook.description = manifest.actions.runbook.description.replace('Not reversible.', 'Declared reversible for bench:act.');
  writeFileSync(path.join(folder, 'plugin.json'), JSON.stringify(manifest, null, 2));
  writeFileSync(
    path.join(folder, 'entry.mjs'),
    `import http from './index.ts';
export default { ...http, undo: () => ({ ok: true, problem: null, shown: 'nothing to undo: a benchmark restart' }) };
`,
  );
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
