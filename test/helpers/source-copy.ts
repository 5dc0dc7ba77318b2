// The source as committed, copied elsewhere: what `npm pack` packs (test/operations/release-package.test.ts)
// and what the memory benchmark compiles (test/bench/memory.ts). No test runtime in it.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Every file git tracks, as this working tree has it, copied into `dest` (not the checkout's
 * git-ignored web/dist, which other tests read), with this checkout's node_modules linked beside
 * them: the dev dependencies that packing (the console's build, the TypeScript compile) needs.
 */
export function copySource(dest: string): void {
  const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    .split('\0')
    .filter((f) => f !== '' && existsSync(path.join(ROOT, f)));
  for (const f of tracked) {
    mkdirSync(path.dirname(path.join(dest, f)), { recursive: true });
    cpSync(path.join(ROOT, f), path.join(dest, f));
  }
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dest, 'node_modules'));
}
