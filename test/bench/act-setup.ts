/**
 * `bench:act`'s install, over the API of a fresh service: operating, an approver who can sign in,
 * the runbook connector, the policy (`runbook` safe for L2), the estate (every service with a
 * failing health URL and a `restart` runbook link), and every service at L2.
 *
 * L2 is granted only by `autonomy.json` in SERVICE_CONFIG_DIR (the API never sets it). The
 * benchmark always writes that file before the service starts; when the service in hand does not
 * read it yet (the levels after start are not L2), the levels are written as `autonomy_levels`
 * rows straight into the benchmark's throwaway database instead, while the service runs (it reads
 * a service's level from the database at each decision), and the report says so (`l2_via`).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AutonomyRepo } from '../../host/governance/autonomy.repo.ts';
import { openDb } from '../../host/storage/db.ts';
import type { Store } from './common.ts';
import { call, expect, makeOperating } from './service.ts';

/** The connector every runbook link names. */
export const CONNECTOR = 'rb';
export const APPROVER = 'approver@bank.example';
const OWNER = 'owner@bank.example';

/** How L2 was granted: by autonomy.json, or by rows written into the throwaway database. */
export type L2Via = 'autonomy.json' | 'database rows';

export const serviceNames = (n: number): string[] => Array.from({ length: n }, (_, i) => `svc-${i}`);

/** A throwaway SERVICE_CONFIG_DIR holding `autonomy.json` with every service at L2. */
export function configDir(services: string[]): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oncall-bench-act-config-'));
  writeFileSync(path.join(dir, 'autonomy.json'), JSON.stringify({ services: Object.fromEntries(services.map((s) => [s, 'L2'])) }, null, 2));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Operating, with the approver signed in: answers the approver's session token. */
export async function operatingWithApprover(base: string, adminToken: string): Promise<string> {
  await makeOperating(base, adminToken);
  await expect('adding the approver', 201, call(base, 'POST', '/v1/people', adminToken, { email: APPROVER, name: 'Bench Approver', role: 'viewer' }));
  const { password } = await expect<{ password: string }>(
    'the approver a password',
    201,
    call(base, 'POST', `/v1/people/${encodeURIComponent(APPROVER)}/password`, adminToken, { expires: '30d' }),
  );
  const { token } = await expect<{ token: string }>(
    'the approver signing in',
    200,
    call(base, 'POST', '/v1/auth/password', null, { email: APPROVER, password }),
  );
  return token;
}

/**
 * The runbook connector (`kind`: the shipped `http`, or the benchmark's reversible copy) on the
 * peer, rehearsable (the peer takes dry runs); the policy; the estate of `services`.
 */
export async function configure(base: string, adminToken: string, o: { kind: string; peer: string; token: string; services: string[] }): Promise<void> {
  const settings = {
    base_url: o.peer,
    health_path: '/ok',
    runbook_path: '/runbook/restart',
    runbook_token: o.token,
    runbook_dry_run: true,
    timeout_s: 5,
  };
  await expect('the runbook connector', 201, call(base, 'PUT', `/v1/connectors/${CONNECTOR}`, adminToken, { kind: o.kind, settings }));
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
    approvers: [APPROVER],
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

/** The services not at L2 now, as GET /v1/autonomy answers. */
async function notL2(base: string, adminToken: string, services: string[]): Promise<string[]> {
  const { services: levels } = await expect<{ services: Array<{ service: string; level: string }> }>(
    'the levels',
    200,
    call(base, 'GET', '/v1/autonomy', adminToken),
  );
  const at = new Map(levels.map((l) => [l.service, l.level]));
  return services.filter((s) => at.get(s) !== 'L2');
}

/** Every service at L2: by autonomy.json when the service read it, else by rows in the throwaway database (see the file's comment). */
export async function grantL2(base: string, adminToken: string, store: Store, services: string[]): Promise<L2Via> {
  const missing = await notL2(base, adminToken, services);
  if (missing.length === 0) return 'autonomy.json';
  const db = openDb(store);
  try {
    const repo = new AutonomyRepo(db);
    const changed_at = new Date().toISOString();
    await db.transaction(async (trx) => {
      for (const service of missing) await repo.set(trx, { service, level: 'L2', changed_at, changed_by: 'bench:act' });
    });
  } finally {
    await db.destroy();
  }
  const still = await notL2(base, adminToken, services);
  if (still.length > 0) throw new Error(`${still.length} services are not at L2 even after writing their rows (${still.slice(0, 3).join(', ')}…)`);
  return 'database rows';
}
