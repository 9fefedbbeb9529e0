import { defineConfig } from 'vite';

// Served by the API under /app/ (the API's `/` is its JSON index). In
// development, `npm run dev -w @sealpost/web` proxies the API's paths to
// SEALPOST_API_URL (default http://127.0.0.1:8080), so the page stays
// same-origin as it is in production.
const api = process.env.SEALPOST_API_URL ?? 'http://127.0.0.1:8080';
const apiPaths = ['/accounts', '/inboxes', '/messages', '/domains', '/usage', '/overview', '/workers', '/healthz'];

export default defineConfig({
  base: '/app/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    target: 'es2022',
    reportCompressedSize: true,
  },
  server: { proxy: Object.fromEntries(apiPaths.map((p) => [p, { target: api, changeOrigin: false }])) },
});
