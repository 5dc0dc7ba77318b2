import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';
import { TestClock } from '../../host/clock.ts';
import { readConnectorsFile } from '../../host/connectors/connectors.file.ts';
import { ConnectorsRepo } from '../../host/connectors/connectors.repo.ts';
import { ConnectorService } from '../../host/connectors/connectors.service.ts';
import { ConnectorKinds } from '../../host/connectors/kinds.ts';
import { LedgerRepo } from '../../host/ledger/ledger.repo.ts';
import { Ledger } from '../../host/ledger/ledger.service.ts';
import { createLogger, silentLogger } from '../../host/log.ts';
import type { ActionRequest } from '../../host/plugins/contract.ts';
import { loadPlugins } from '../../host/plugins/loader.ts';
import { SecretCipher } from '../../host/secrets/cipher.ts';
import { openDb } from '../../host/storage/db.ts';
import { migrate } from '../../host/storage/migrate.ts';
import { UnitOfWork } from '../../host/storage/unit-of-work.ts';
import { createTestStore } from './db.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** A ConnectorService as the acting area gets it, and every log line it wrote. */
export interface ActionHost {
  connectors: ConnectorService;
  logs: string[];
}

/**
 * A ConnectorService on a fresh database with the shipped plugins (plus `pluginDirs`) and the
 * connectors of a connectors.json (`{"<name>": {kind, settings}}`; a secret may be
 * `{"env": "VAR"}`, read from `env`). Everything is removed after the test.
 */
export async function actionHost(
  t: ExecutionContext,
  connectors: Record<string, { kind: string; settings: Record<string, unknown> }>,
  opts: { pluginDirs?: string[]; env?: NodeJS.ProcessEnv } = {},
): Promise<ActionHost> {
  const store = await createTestStore();
  const db = openDb({ databaseUrl: store.databaseUrl, dataDir: store.dataDir });
  const configDir = mkdtempSync(path.join(tmpdir(), 'oncall-act-config-'));
  t.teardown(async () => {
    await db.destroy();
    await store.cleanup();
    rmSync(configDir, { recursive: true, force: true });
  });
  await migrate(db);
  writeFileSync(path.join(configDir, 'connectors.json'), JSON.stringify(connectors));
  const plugins = await loadPlugins({ dirs: [path.join(REPO, 'plugins'), ...(opts.pluginDirs ?? [])], log: silentLogger() });
  const logs: string[] = [];
  const log = createLogger({ logLevel: 'debug' }, { write: (line: string) => (logs.push(line), true) } as unknown as NodeJS.WritableStream);
  const clock = new TestClock('2026-06-01T00:00:00.000Z');
  const service = new ConnectorService({
    repo: new ConnectorsRepo(db),
    cipher: new SecretCipher(randomBytes(32)),
    ledger: new Ledger({ repo: new LedgerRepo(db), clock, work: new UnitOfWork(db) }),
    clock,
    log,
    kinds: new ConnectorKinds(plugins.loaded, plugins.broken),
    file: readConnectorsFile(configDir),
    env: opts.env ?? {},
  });
  return { connectors: service, logs };
}

/** An action request for episode `ep-1` of service payments. */
export function actionRequest(kind: string, params: Record<string, unknown>, key = `ep-1/${kind}/1`): ActionRequest {
  return {
    kind,
    params,
    episode: {
      id: 'ep-1',
      service: 'payments',
      alerts: ['PaymentsDown'],
      url: 'https://oncall.bank.example/episodes/ep-1',
      summary: 'payments is down: target-down holds',
    },
    key,
  };
}
