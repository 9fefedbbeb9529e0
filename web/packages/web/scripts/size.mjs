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
