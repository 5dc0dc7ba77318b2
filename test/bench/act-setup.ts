/**
 * `bench:act`'s install, over the API of a fresh service: operating, the runbook connector (the
 * shipped `http` kind), the policy (`runbook` safe for L2), the estate (every service with a
 * failing health URL and a `restart` runbook link), and every service at L2 by `autonomy.json`
 * in SERVICE_CONFIG_DIR, the only way to L2 (the API never sets it; docs/governance.md).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { call, expect } from './service.ts';

/** The connector every runbook link names. */
export const CONNECTOR = 'rb';
const OWNER = 'owner@bank.example';

export const serviceNames = (n: number): string[] => Array.from({ length: n }, (_, i) => `svc-${i}`);

/** A throwaway SERVICE_CONFIG_DIR holding `autonomy.json` with every service at L2. */
export function configDir(services: string[]): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oncall-bench-act-config-'));
  writeFileSync(path.join(dir, 'autonomy.json'), JSON.stringify({ services: Object.fromEntries(services.map((s) => [s, 'L2'])) }, null, 2));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The runbook connector on the peer, rehearsable (`runbook_dry_run`: the peer takes dry runs, as
 * Rundeck and AWX can); the policy; the estate of `services`.
 */
export async function configure(base: string, adminToken: string, o: { peer: string; token: string; services: string[] }): Promise<void> {
  const settings = {
    base_url: o.peer,
    health_path: '/ok',
    runbook_path: '/runbook/restart',
    runbook_token: o.token,
    runbook_dry_run: true,
    timeout_s: 5,
  };
  await expect('the runbook connector', 201, call(base, 'PUT', `/v1/connectors/${CONNECTOR}`, adminToken, { kind: 'http', settings }));
  await expect(
    'the policy',
    200,
    call(base, 'PUT', '/v1/policy', adminToken, {
      default_autonomy: 'shadow',
      ceilings: {},
      safe_for_l2: ['runbook'],
      always_approve: [],
      freeze_windows: [],
      max_actions_per_service_per_hour: 1000,
    }),
  );
  const entry = (name: string) => ({
    owner: OWNER,
    tier: 3,
    health_url: `${o.peer}/health/${name}`,
    links: [{ kind: 'runbook', name: 'restart', connector: CONNECTOR, path: '/runbook/restart' }],
  });
  await expect(
    'the estate',
    200,
    call(base, 'PUT', '/v1/estate/overrides', adminToken, { services: Object.fromEntries(o.services.map((s) => [s, entry(s)])) }),
  );
}

/** Checks that every service is at L2 with its level from the file (GET /v1/autonomy); throws naming those that are not. */
export async function checkL2(base: string, adminToken: string, services: string[]): Promise<void> {
  const { services: levels } = await expect<{ services: Array<{ service: string; level: string; source?: string }> }>(
    'the levels',
    200,
    call(base, 'GET', '/v1/autonomy', adminToken),
  );
  const at = new Map(levels.map((l) => [l.service, l]));
  const not = services.filter((s) => at.get(s)?.level !== 'L2' || at.get(s)?.source !== 'file');
  if (not.length > 0)
    throw new Error(
      `${not.length} services are not at L2 from autonomy.json: ${not
        .slice(0, 3)
        .map((s) => `${s} ${JSON.stringify(at.get(s) ?? null)}`)
        .join(', ')}`,
    );
}
