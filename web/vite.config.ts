import { svelte } from '@sveltejs/vite-plugin-svelte';
import { defineConfig } from 'vite';

// The console: built into web/dist, served by the host on the API's port (host/http/console.ts).
// Hashed file names under assets/ are served with a year-long immutable cache; index.html is not.
export default defineConfig({
  root: import.meta.dirname,
  plugins: [svelte()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    // No inline scripts or data: URLs: the host's Content-Security-Policy forbids them.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
  server: {
    // `npm run dev:web`: the API stays on the host; Vite proxies it.
    proxy: { '/v1': 'http://localhost:8700', '/health': 'http://localhost:8700' },
  },
});
