import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';

/**
 * A vendor folder (SERVICE_PLUGINS_DIR) with a pack whose cause `fixpack/stuck` holds while an
 * alert `WorkerStuck` fires and proposes `restart {target: worker}`, verified by the same cause
 * ruled out 60 s later; and a connector kind `fixer` that performs `restart` (rehearsable,
 * reversible) by writing a line to the file in its `log` setting. `acted(log)` reads the lines.
 * Options: the rehearsal fails (`rehearsalFails`), the action's key ends each action's line
 * (`logKey`), the cause holds even once the alert resolved (`stillHolds`: a fix that did not work),
 * the rehearsal repeats the episode's summary, words from the alert (`echo`), the connector cannot
 * rehearse with its settings (`notRehearsable`: no failure, the path goes on). A `fixer` connector
 * whose `log` setting ends in `broken` fails its test.
 */
export function fixVendor(
  t: ExecutionContext,
  opts: { rehearsalFails?: boolean; notRehearsable?: boolean; logKey?: boolean; stillHolds?: boolean; echo?: boolean } = {},
): { dir: string; log: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-fix-vendor-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const log = path.join(dir, 'actions.log');
  mkdirSync(path.join(dir, 'fixpack'));
  writeFileSync(
    path.join(dir, 'fixpack', 'plugin.json'),
    JSON.stringify({ name: 'fixpack', version: '1.0.0', kind: 'pack', api: '^1.2.0', entry: 'index.mjs' }),
  );
  writeFileSync(
    path.join(dir, 'fixpack', 'index.mjs'),
    `export default { causes: [{ id: 'fixpack/stuck', title: 'The worker is stuck', specificity: 95, applies: { alerts: ['WorkerStuck'] }, reads: [],
      check: (ctx) => !${opts.stillHolds === true} && ctx.signals.every((s) => s.status !== 'firing')
        ? { verdict: 'ruled_out', reason: 'no stuck worker', evidence: [{ source: 'signals', kind: 'x', query: 'q', at: ctx.at, observed: 0, excerpt: 'fine' }] }
        : { verdict: 'holds', reason: 'the worker is stuck', evidence: [{ source: 'signals', kind: 'x', query: 'q', at: ctx.at, observed: 1, excerpt: 'stuck' }],
            remedy: { action: 'restart', params: { target: 'worker' } }, verification: { cause: 'fixpack/stuck', expect: 'ruled_out', after_s: 60 } } }] };`,
  );
  mkdirSync(path.join(dir, 'fixer'));
  writeFileSync(
    path.join(dir, 'fixer', 'plugin.json'),
    JSON.stringify({
      name: 'fixer',
      version: '1.0.0',
      kind: 'connector',
      api: '^1.2.0',
      entry: 'index.mjs',
      settings: {
        type: 'object',
        additionalProperties: false,
        required: ['log'],
        properties: { log: { type: 'string', description: 'where actions are written' } },
      },
      actions: {
        restart: {
          description: 'restarts a target',
          params: { type: 'object', additionalProperties: false, required: ['target'], properties: { target: { type: 'string' } } },
          rehearsable: true,
          reversible: true,
        },
      },
    }),
  );
  writeFileSync(
    path.join(dir, 'fixer', 'index.mjs'),
    `import { appendFileSync } from 'node:fs';
export default {
  test: (ctx) => ctx.settings.log.endsWith('broken') ? { ok: false, problem: 'the <b>fixer</b> is down' } : { ok: true, problem: null },
  rehearse: (ctx, a) => ${opts.notRehearsable === true} ? { ok: false, problem: 'dry runs are off in its settings', not_rehearsable: true } : (${opts.rehearsalFails === true} ? { ok: false, problem: 'the target is not there' } : { ok: true, problem: null, shown: 'would restart ' + a.params.target + (${opts.echo === true} ? ' for ' + a.episode.summary : '') }),
  act: (ctx, a) => { appendFileSync(ctx.settings.log, a.kind + ' ' + a.params.target + (${opts.logKey === true} ? ' ' + a.key : '') + '\\n'); return { ok: true, problem: null, shown: 'restarted ' + a.params.target, undo: { target: a.params.target } }; },
  undo: (ctx, a) => { appendFileSync(ctx.settings.log, 'undo ' + a.undo.target + '\\n'); return { ok: true, problem: null, shown: 'undone' }; },
};`,
  );
  return { dir, log };
}

/** The lines the `fixer` connector wrote: one per action or undo. */
export const acted = (log: string): string[] => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : []);

/** The estate overrides of a `jobs` service the `fixer` connector `fix` serves, with one approver (tier 3). */
export const JOBS_ESTATE = {
  services: {
    jobs: { owner: 'owner@bank.example', approvers: ['approver@bank.example'], tier: 3, links: [{ kind: 'workload', match: 'job="jobs"', connector: 'fix' }] },
  },
};
