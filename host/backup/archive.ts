import { createWriteStream } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { create, extract, list } from 'tar';

/** What a backup file holds besides its manifest (any of them; the manifest lists which). */
export const BACKUP_FILES = ['service.db', 'secret.key', 'ledger-checkpoints.jsonl'] as const;
export type BackupFile = (typeof BACKUP_FILES)[number];
export const MANIFEST = 'manifest.json';
const FORMAT = 'oncall-backup';

/** The backup's own description, written first into the archive. */
export interface Manifest {
  format: typeof FORMAT;
  version: 1;
  created_at: string;
  /** The oncall version that made it. */
  service_version: string;
  engine: 'sqlite' | 'mysql';
  /** The install's fingerprint. */
  fingerprint: string;
  /** The ledger head the backup holds (SQLite), or the head when it was made (MySQL: the dump taken after it holds it too). */
  head: { seq: number; hash: string };
  /** Verify of the copied database (SQLite); null for MySQL, whose database is not in the file. */
  verify: { ok: boolean; problem: string | null; first_bad_seq: number | null; checked: number } | null;
  /** The migrations the database had: a newer version's backup is refused by an older one. */
  migrations: string[];
  /** `file`: the secret key is in the backup; `environment`: SERVICE_SECRET_KEY, kept elsewhere. */
  secret_key: 'file' | 'environment';
  files: BackupFile[];
}

/** The backup file is not one, or not whole. */
export class BackupFileError extends Error {}

/**
 * Writes `manifest` and `files` (from `dir`) as a gzip'd tar to `file`: first to a temporary
 * file beside it (mode 0600: it holds the secret key), renamed into place when complete, so a
 * backup interrupted midway never leaves a file that looks whole.
 */
export async function writeArchive(file: string, dir: string, manifest: Manifest): Promise<void> {
  await writeFile(path.join(dir, MANIFEST), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
  const partial = `${file}.partial-${process.pid}`;
  try {
    await pipeline(create({ gzip: true, cwd: dir, portable: true }, [MANIFEST, ...manifest.files]), createWriteStream(partial, { mode: 0o600, flags: 'wx' }));
    await rename(partial, file);
  } catch (e) {
    await rm(partial, { force: true });
    throw e;
  }
}

/**
 * Unpacks a backup file into `dir` (empty) and answers its manifest. Only the known names are
 * taken, as plain files; anything else in the archive (a path with `..`, a link) is refused.
 */
export async function readArchive(file: string, dir: string): Promise<Manifest> {
  const allowed = new Set<string>([MANIFEST, ...BACKUP_FILES]);
  const entries: string[] = [];
  try {
    await list({ file, onReadEntry: (e) => void entries.push(`${e.type}:${e.path}`) });
  } catch (e) {
    throw new BackupFileError(`${file} is not a backup made by oncall backup: ${(e as Error).message}`);
  }
  const odd = entries.filter((e) => !e.startsWith('File:') || !allowed.has(e.slice('File:'.length)));
  if (odd.length > 0 || !entries.includes(`File:${MANIFEST}`))
    throw new BackupFileError(
      `${file} is not a backup made by oncall backup (${odd.length > 0 ? `unexpected entry ${odd[0]!.split(':').slice(1).join(':')}` : 'no manifest'})`,
    );
  await extract({ file, cwd: dir, strict: true, filter: (p, entry) => allowed.has(p) && (entry as { type?: string }).type === 'File' });
  let manifest: Manifest;
  try {
    manifest = JSON.parse(await readFile(path.join(dir, MANIFEST), 'utf8')) as Manifest;
  } catch {
    throw new BackupFileError(`${file}: its manifest is not readable`);
  }
  if (manifest.format !== FORMAT || manifest.version !== 1)
    throw new BackupFileError(`${file} is not a backup this version reads (format ${String(manifest.format)} ${String(manifest.version)})`);
  for (const f of manifest.files) if (!entries.includes(`File:${f}`)) throw new BackupFileError(`${file} is incomplete: ${f} is missing`);
  return manifest;
}
