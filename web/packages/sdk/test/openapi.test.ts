// Drift test: regenerating the types from docs/openapi.json must give the
// committed src/generated/openapi.ts byte for byte.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

test('generated OpenAPI types match docs/openapi.json', () => {
  const script = fileURLToPath(new URL('../../scripts/gen-openapi.mjs', import.meta.url));
  const run = spawnSync(process.execPath, [script, '--check'], { encoding: 'utf8' });
  assert.equal(run.status, 0, `${run.stdout}${run.stderr}`);
});
