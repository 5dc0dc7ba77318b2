import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from './log.ts';

/** Where the first start leaves the admin token when no terminal is there to show it. */
export const ADMIN_TOKEN_FILE = 'admin-token';

/**
 * Hands the admin token generated at the very first start to the operator, and never to the log
 * stream. On a terminal (`npm start` by hand) it is printed there, once. Without one (systemd,
 * a container, output piped to a collector), stdout is the JSON log stream, so the token goes
 * to `admin-token` in the data directory, mode 0600, and the log says where (not what).
 */
export function deliverAdminToken(token: string, o: { terminal: boolean; dataDir: string; write: (text: string) => void; log: Logger }): void {
  if (o.terminal) {
    o.write(
      `\n  Admin token (shown once, keep it safe; only its hash is stored):\n\n    ${token}\n\n` + `  Set SERVICE_ADMIN_TOKEN to choose your own instead.\n\n`,
    );
    return;
  }
  const file = path.join(o.dataDir, ADMIN_TOKEN_FILE);
  writeFileSync(file, token + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  o.log.warn(
    { admin_token_file: file },
    'first start: the generated admin token is in this file (mode 0600, only its hash is stored); read it, keep it safe, then delete the file',
  );
}
