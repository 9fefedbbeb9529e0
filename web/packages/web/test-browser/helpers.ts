// Shared by the browser tests and the browser benchmark: the stack's
// addresses, Debian's chromium, the CLI, SMTP mail.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { AxeBuilder } from '@axe-core/playwright';
import type { Page } from 'playwright-core';

export const API = process.env['SEALPOST_API_URL']?.replace(/\/+$/, '');
export const SMTP = process.env['SEALPOST_SMTP_ADDR'];
export const CI = process.env['CI'] === 'true';
export const CHROMIUM = process.env['SEALPOST_CHROMIUM'] ?? '/usr/bin/chromium';
/** The repository's root (this file runs compiled, from web/packages/web/build/browser/web/test-browser/). */
export const ROOT = fileURLToPath(new URL('../../../../../../../', import.meta.url));
/** The `sealpost` CLI: SEALPOST_CLI, else target/debug/sealpost. */
export const CLI = process.env['SEALPOST_CLI'] ?? `${ROOT}target/debug/sealpost`;
/** packages/web/test-results/. */
export const RESULTS = fileURLToPath(new URL('../../../../test-results/', import.meta.url));

export const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function checkChromium(): void {
  assert.ok(existsSync(CHROMIUM), `no chromium at ${CHROMIUM} (apt-get install chromium, or set SEALPOST_CHROMIUM)`);
}

export function rfc5322Date(): string {
  return new Date().toUTCString().replace('GMT', '+0000');
}

export function messageId(): string {
  return `<${randomBytes(9).toString('hex')}@example.com>`;
}

/** Base64 in 76-character lines, as MIME wants it. */
export function mimeBase64(bytes: Uint8Array): string {
  return (Buffer.from(bytes).toString('base64').match(/.{1,76}/g) ?? []).join('\r\n');
}

/** A mail with a text part and one attachment. */
export function mailWithAttachment(to: string, subject: string, text: string, file: { name: string; type: string; bytes: Uint8Array }): string {
  const boundary = `b${randomBytes(6).toString('hex')}`;
  return [
    'From: Example <sender@example.com>',
    `To: ${to}`,
    `Subject: ${subject}`,
    `Date: ${rfc5322Date()}`,
    `Message-ID: ${messageId()}`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    text,
    `--${boundary}`,
    `Content-Type: ${file.type}; name="${file.name}"`,
    `Content-Disposition: attachment; filename="${file.name}"`,
    'Content-Transfer-Encoding: base64',
    '',
    mimeBase64(file.bytes),
    `--${boundary}--`,
  ].join('\r\n');
}

/** Serious and critical accessibility findings on the page as it is now. */
export async function accessibilityProblems(page: Page, screen: string): Promise<string[]> {
  const results = await new AxeBuilder({ page }).exclude('iframe.mail-html').analyze();
  assert.ok(results.passes.length > 10, `${screen}: axe checked too little (${results.passes.length} rules passed)`);
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${screen}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/** Runs the CLI with its own state directory; answers stdout, fails with stderr. */
export function cli(configDir: string, args: string[], extraEnv: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      CLI,
      args,
      {
        env: { ...process.env, SEALPOST_API_URL: API as string, SEALPOST_CONFIG_DIR: configDir, NO_COLOR: '1', ...extraEnv },
        timeout: 60_000,
      },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`sealpost ${args.join(' ')} failed: ${error.message}\n${stderr}`));
        else resolve(stdout);
      },
    );
  });
}

// ---- Account areas (devices, plan and billing, webhooks) ----------------------

/** A new account made with `sealpost init` in `configDir`: its phrase (the CLI keeps its session). */
export async function cliAccount(configDir: string): Promise<string> {
  const init = await cli(configDir, ['init']);
  const phrase = /^\s{4}((?:[a-z]+ ){11}[a-z]+)\s*$/m.exec(init)?.[1];
  assert.ok(phrase, `no phrase in the output of init:\n${init}`);
  return phrase;
}

/** Signs the page (already at /app/) in with a phrase and waits for the account's navigation. */
export async function signInWithPhrase(page: Page, phrase: string): Promise<void> {
  await page.getByRole('button', { name: 'Sign in with my phrase' }).click();
  await page.getByLabel('Recovery phrase (12 words)').fill(phrase);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByTestId('nav-mail').waitFor({ timeout: 30_000 });
}

/** Starts the CLI without waiting for it: its output so far, and its end. */
export function cliInBackground(configDir: string, args: string[]): { output: () => string; done: Promise<string>; stop: () => void } {
  let out = '';
  let stopped = false;
  const child = spawn(CLI, args, {
    env: { ...process.env, SEALPOST_API_URL: API as string, SEALPOST_CONFIG_DIR: configDir, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const done = new Promise<string>((resolve, reject) => {
    child.on('exit', (code) => (code === 0 || stopped ? resolve(out) : reject(new Error(`sealpost ${args.join(' ')} exited ${code}:\n${out}`))));
  });
  return {
    output: () => out,
    done,
    stop: () => {
      stopped = true;
      child.kill('SIGINT');
    },
  };
}

/** Polls `f` every half second until it answers something other than undefined (or fails after `ms`). */
export async function eventually<T>(what: string, f: () => Promise<T | undefined> | T | undefined, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await f();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms${last !== undefined ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
