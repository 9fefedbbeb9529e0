// Prints the size of each built file under dist/, raw and gzipped.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const dist = new URL('../dist/', import.meta.url).pathname;
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else files.push(path);
  }
};
walk(dist);
let js = 0;
let jsGzip = 0;
for (const path of files.sort()) {
  const bytes = readFileSync(path);
  const gz = gzipSync(bytes, { level: 9 }).length;
  if (path.endsWith('.js')) {
    js += bytes.length;
    jsGzip += gz;
  }
  console.log(`${path.slice(dist.length).padEnd(40)} ${String(bytes.length).padStart(8)} B  gzip ${String(gz).padStart(7)} B`);
}
console.log(`JavaScript total: ${(js / 1024).toFixed(1)} KiB, gzipped ${(jsGzip / 1024).toFixed(1)} KiB`);

// The first screen loads what index.html names (its module script and preloads), not the worker.
const html = readFileSync(join(dist, 'index.html'), 'utf8');
const first = [...html.matchAll(/(?:src|href)="\/app\/([^"]+\.js)"/g)].map((m) => m[1]);
const firstGzip = first.reduce((sum, name) => sum + gzipSync(readFileSync(join(dist, name)), { level: 9 }).length, 0);
const BUDGET = 150 * 1024;
console.log(`First screen JavaScript (${first.join(', ')}): gzipped ${(firstGzip / 1024).toFixed(1)} KiB of a ${BUDGET / 1024} KiB budget`);
if (first.length === 0 || firstGzip > BUDGET) {
  console.error(first.length === 0 ? 'no script found in index.html' : 'over the first-screen budget');
  process.exit(1);
}
