import { readFileSync } from 'node:fs';
import path from 'node:path';

export const CONNECTORS_FILE = 'connectors.json';

/** Connector names: lower case, a letter or digit first, up to 63 letters, digits and hyphens. */
export const NAME_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** One entry of connectors.json, as written (secrets may be `{"env": "VAR"}`). */
export interface FileConnector {
  name: string;
  kind: string;
  settings: Record<string, unknown>;
  /** What is wrong with this entry itself (bad name, no kind), or null. */
  problem: string | null;
}

/** What connectors.json holds, read once at start. */
export interface ConnectorsFile {
  /** The file's path, or null when SERVICE_CONFIG_DIR is not set or holds no connectors.json. */
  path: string | null;
  connectors: FileConnector[];
  /** What is wrong with the file as a whole (unreadable, not JSON, not an object), or null. */
  problem: string | null;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads `connectors.json` from the configuration directory: `{"<name>": {"kind", "settings"}}`.
 * Never throws: a bad file or entry is reported as a problem (the service starts anyway, and
 * every name the file holds stays file-managed, so the console cannot silently shadow it).
 */
export function readConnectorsFile(configDir: string | null): ConnectorsFile {
  if (configDir === null) return { path: null, connectors: [], problem: null };
  const file = path.join(configDir, CONNECTORS_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { path: null, connectors: [], problem: null };
    return { path: file, connectors: [], problem: `${CONNECTORS_FILE} cannot be read (${String(code ?? e)})` };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { path: file, connectors: [], problem: `${CONNECTORS_FILE} is not valid JSON (${(e as Error).message.split('\n', 1)[0]})` };
  }
  if (!isObj(raw)) return { path: file, connectors: [], problem: `${CONNECTORS_FILE} must be an object of {"<name>": {"kind": ..., "settings": {...}}}` };
  const connectors: FileConnector[] = [];
  for (const [name, entry] of Object.entries(raw)) {
    const kind = isObj(entry) && typeof entry.kind === 'string' ? entry.kind : '';
    const settings = isObj(entry) && isObj(entry.settings) ? entry.settings : {};
    let problem: string | null = null;
    if (!NAME_PATTERN.test(name)) problem = `"${name.slice(0, 80)}" is not a connector name (lower case, [a-z0-9][a-z0-9-]{0,62})`;
    else if (!isObj(entry)) problem = `${CONNECTORS_FILE}: "${name}" must be an object {"kind", "settings"}`;
    else if (kind === '') problem = `${CONNECTORS_FILE}: "${name}" has no kind`;
    else if (entry.settings !== undefined && !isObj(entry.settings)) problem = `${CONNECTORS_FILE}: "${name}".settings must be an object`;
    else {
      const extra = Object.keys(entry).filter((k) => k !== 'kind' && k !== 'settings');
      if (extra.length > 0) problem = `${CONNECTORS_FILE}: "${name}" has unknown field ${extra[0]}`;
    }
    connectors.push({ name: NAME_PATTERN.test(name) ? name : name.slice(0, 63), kind, settings, problem });
  }
  connectors.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { path: file, connectors, problem: null };
}

/**
 * A file secret given as `{"env": "VAR"}` read from the environment; any other value as is.
 * Answers a problem naming the field and the variable (never a value) when it is not set.
 */
export function resolveEnvRef(value: unknown, field: string, env: NodeJS.ProcessEnv): { value: unknown } | { problem: string } {
  if (!isObj(value) || Object.keys(value).length !== 1 || typeof value.env !== 'string') return { value };
  const v = env[value.env];
  if (v === undefined || v === '') return { problem: `${field}: environment variable ${value.env} is not set` };
  return { value: v };
}
