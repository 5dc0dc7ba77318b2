import type { ConnectorService } from '../connectors/connectors.service.ts';
import type { ActionReport } from '../connectors/connector-actions.ts';
import type { ActionResult } from '../plugins/contract.ts';
import type { ActionConnectors } from './acting.service.ts';

const result = (r: ActionReport): ActionResult => ({
  ok: r.ok,
  problem: r.problem,
  ...(r.shown === null ? {} : { shown: r.shown }),
  ...(r.undo === null ? {} : { undo: r.undo }),
  ...(r.not_rehearsable ? { not_rehearsable: true } : {}),
});

/** The connectors area's action calls as the acting path uses them. */
export function actionConnectors(connectors: Pick<ConnectorService, 'actionKinds' | 'rehearse' | 'act' | 'undo'>): ActionConnectors {
  return {
    performers: async (kind) =>
      (await connectors.actionKinds())
        .filter((c) => c.actions[kind] !== undefined)
        .map((c) => {
          const { problem, ...declaration } = c.actions[kind]!;
          return { name: c.name, kind: c.kind, declaration, fault: c.fault ?? problem };
        }),
    rehearse: async (name, request) => result(await connectors.rehearse(name, request)),
    act: async (name, request) => result(await connectors.act(name, request)),
    undo: async (name, request) => result(await connectors.undo(name, request)),
  };
}
