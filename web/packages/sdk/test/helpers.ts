import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The `web/` directory (tests run from packages/sdk/build/test/). */
export const WEB_DIR = fileURLToPath(new URL('../../../../', import.meta.url));

/** A file by its path relative to `web/`. */
export function fromWeb(relative: string): string {
  return fileURLToPath(new URL(relative, new URL('../../../../', import.meta.url)));
}

export function readJson<T = unknown>(relativeToWeb: string): T {
  return JSON.parse(readFileSync(fromWeb(relativeToWeb), 'utf8')) as T;
}

/** The contract's vectors: the Rust crate's file itself, never a copy. */
export const VECTORS_PATH = '../crates/seal/tests/data/vectors.json';
/** The codes fixture shared with the CLI's Rust test. */
export const CODES_PATH = '../bins/cli/tests/data/codes.json';
/** The support sealing fixture the Rust SDK writes and checks (crates/client/src/support.rs). */
export const SUPPORT_FIXTURE_PATH = '../crates/client/tests/data/support.json';
