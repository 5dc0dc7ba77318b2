// `prepare` (run by `npm install` and `npm ci`, also with --omit=dev): builds the web console
// with Vite when Vite is installed. A production install (`npm ci --omit=dev`) has no Vite: it
// keeps a console already built in web/dist (the release package ships it, see package.json
// `files`), and otherwise says so; the host then answers a page explaining it (docs/install.md).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const built = existsSync(path.join(ROOT, 'web', 'dist', 'index.html'));

if (existsSync(path.join(ROOT, 'node_modules', 'vite', 'package.json'))) {
  const r = spawnSync('npm', ['run', 'build:web'], { cwd: ROOT, stdio: 'inherit' });
  process.exit(r.status ?? 1);
} else if (built) {
  process.stdout.write('oncall-engineer: Vite is not installed (production install); keeping the console built in web/dist.\n');
} else {
  process.stdout.write(
    'oncall-engineer: Vite is not installed (production install) and web/dist holds no built console.\n' +
      '  The service and its API work; the console page will say it is not built. Build it where the\n' +
      '  dev dependencies are (npm ci && npm run build:web) and copy web/dist here, or install from the\n' +
      '  release package (npm pack), which ships web/dist.\n',
  );
}
