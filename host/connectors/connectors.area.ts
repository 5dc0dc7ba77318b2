import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { PluginRegistry } from '../plugins/loader.ts';
import type { SecretCipher } from '../secrets/cipher.ts';
import type { Db } from '../storage/db.ts';
import { readConnectorsFile } from './connectors.file.ts';
import { ConnectorsRepo } from './connectors.repo.ts';
import { connectorRoutes } from './connectors.routes.ts';
import { ConnectorService } from './connectors.service.ts';
import { ConnectorKinds } from './kinds.ts';

export interface ConnectorsArea extends Area {
  readonly connectors: ConnectorService;
}

/** Connectors (configured in the console or in connectors.json); owns `connectors`. */
export function createConnectorsArea(d: {
  db: Db;
  cipher: SecretCipher;
  plugins: PluginRegistry;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  config: Config;
}): ConnectorsArea {
  const connectors = new ConnectorService({
    repo: new ConnectorsRepo(d.db),
    cipher: d.cipher,
    ledger: d.ledger,
    clock: d.clock,
    log: d.log,
    kinds: new ConnectorKinds(d.plugins.loaded, d.plugins.broken),
    file: readConnectorsFile(d.config.configDir),
  });
  return { connectors, routes: ({ server, log, guard }: Http) => connectorRoutes(server, { log, guard, connectors }) };
}
