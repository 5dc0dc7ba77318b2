import path from 'node:path';
import { createRequire } from 'node:module';
import type { parseAllDocuments as ParseAllDocuments } from 'yaml';

/** Service manifests in a repository: Backstage catalog-info and plain service.yaml. */

export const MANIFEST_NAMES = new Set(['service.yaml', 'service.yml', 'catalog-info.yaml', 'catalog-info.yml']);

type Doc = Record<string, unknown>;
const isDoc = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A scalar at `a.b` of a document as text, or undefined (absent, a list, a mapping). */
function text(doc: Doc, key: string): string | undefined {
  let v: unknown = doc;
  for (const k of key.split('.')) v = isDoc(v) ? v[k] : undefined;
  if (typeof v === 'string') return v.trim() === '' ? undefined : v.trim();
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

/**
 * The documents of a YAML file that parse to mappings. A document that does not parse, or
 * whose aliases expand past the `yaml` package's guard (a "billion laughs" file), is skipped.
 */
function documents(source: string): Doc[] {
  // The yaml package is loaded when a manifest is first read, not when the plugin loads at start.
  const { parseAllDocuments } = createRequire(import.meta.url)('yaml') as { parseAllDocuments: typeof ParseAllDocuments };
  const out: Doc[] = [];
  for (const d of parseAllDocuments(source)) {
    if (d.errors.length > 0) continue;
    try {
      const v: unknown = d.toJS();
      if (isDoc(v)) out.push(v);
    } catch {
      // skipped: see above
    }
  }
  return out;
}

/** Services named in one manifest: Backstage catalog-info (kind Component) or a service.yaml. */
export function servicesInManifest(file: string, source: string): Array<{ name: string; evidence: Record<string, unknown> }> {
  const base = path.posix.basename(file);
  const found: Array<{ name: string; evidence: Record<string, unknown> }> = [];
  for (const doc of documents(source)) {
    const y = { get: (key: string) => text(doc, key) };
    if (base.startsWith('catalog-info.')) {
      const kind = y.get('kind');
      const type = y.get('spec.type') ?? null;
      if (kind !== 'Component' || type === 'library' || type === 'documentation') continue;
      const name = y.get('metadata.name');
      if (name !== undefined)
        found.push({
          name,
          evidence: {
            manifest: 'backstage',
            kind,
            type,
            owner: y.get('spec.owner') ?? null,
            system: y.get('spec.system') ?? null,
            lifecycle: y.get('spec.lifecycle') ?? null,
          },
        });
    } else {
      const name = y.get('name') ?? y.get('service') ?? y.get('metadata.name');
      if (name !== undefined) found.push({ name, evidence: { manifest: 'service', owner: y.get('owner') ?? y.get('team') ?? null } });
    }
  }
  return found;
}
