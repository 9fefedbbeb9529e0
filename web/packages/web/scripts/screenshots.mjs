// Copies the browser tests' screenshots (test-results/*.png) to docs/web/,
// where docs/web.md shows them. Run after `npm run test:browser`.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';

const from = new URL('../test-results/', import.meta.url);
const to = new URL('../../../../docs/web/', import.meta.url);
mkdirSync(to, { recursive: true });
const shots = readdirSync(from).filter((name) => name.endsWith('.png')).sort();
if (shots.length === 0) throw new Error('no screenshots in test-results/: run npm run test:browser first');
for (const name of shots) {
  copyFileSync(new URL(name, from), new URL(name, to));
  console.log(`docs/web/${name}`);
}
