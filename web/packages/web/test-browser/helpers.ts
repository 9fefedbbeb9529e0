// Shared by the browser tests and the browser benchmark: the stack's
// addresses, Debian's chromium, the CLI, SMTP mail.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { AxeBuilder } from '@axe-core/playwright';
import { AccountKeys, generatePhrase, SealpostClient } from '@sealpost/sdk';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

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

// ---- Mail, settings, activity, phone and keyboard flows (issue #32) ----------------

/** The directory where the stack writes what its SMTP relay accepted (`SEALPOST_STACK_RELAY_DIR`). */
export const RELAY_DIR = process.env['SEALPOST_STACK_RELAY_DIR'];

/** Why a flow is skipped: no stack (or, under CI=true, a failure instead). */
export const STACK_SKIP =
  API && SMTP
    ? false
    : CI
      ? false
      : 'browser tests skipped: set SEALPOST_API_URL and SEALPOST_SMTP_ADDR (a stack: sealpost-stack --env FILE) to run them';

/** A fresh account made with the SDK: its phrase (to sign the page in), keys and a signed-in client. */
export async function newAccount(): Promise<{ phrase: string; keys: AccountKeys; client: SealpostClient }> {
  assert.ok(API && SMTP, 'CI=true: set SEALPOST_API_URL and SEALPOST_SMTP_ADDR');
  const phrase = generatePhrase();
  const keys = await AccountKeys.fromPhrase(phrase);
  const client = await SealpostClient.register({ baseUrl: API, keys });
  return { phrase, keys, client };
}

/** Chromium with a fresh profile at a viewport; `close` also removes the profile. */
export async function openBrowser(viewport: { width: number; height: number } = { width: 1280, height: 800 }, options: { isMobile?: boolean; hasTouch?: boolean } = {}): Promise<{ context: BrowserContext; page: Page; close: () => Promise<void> }> {
  checkChromium();
  const profile = mkdtempSync(join(tmpdir(), 'sealpost-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport, ...options });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Signs the page in with a recovery phrase (pointer and typing). */
export async function signInPage(page: Page, phrase: string): Promise<void> {
  await page.goto(`${API}/app/`);
  await page.getByRole('button', { name: 'Sign in with my phrase' }).click();
  await page.getByLabel('Recovery phrase (12 words)').fill(phrase);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Addresses' }).waitFor();
}

/** A screenshot of the page as it is, in test-results/. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(RESULTS, { recursive: true });
  await page.screenshot({ path: join(RESULTS, `${name}.png`), fullPage: false });
}

/** A plain RFC 5322 mail from `from` to `to`. */
export function plainMail(from: string, to: string, subject: string, text: string): Uint8Array {
  return new TextEncoder().encode(
    [`From: ${from}`, `To: ${to}`, `Subject: ${subject}`, `Date: ${rfc5322Date()}`, `Message-ID: ${messageId()}`, 'MIME-Version: 1.0', 'Content-Type: text/plain; charset=utf-8', '', text, ''].join('\r\n'),
  );
}

/** The first message the stack's relay accepted that `match`es, waiting up to `timeoutMs`. */
export async function relayedMail(match: (mail: { raw: string; mailFrom: string; recipients: string[] }) => boolean, timeoutMs = 20_000): Promise<{ raw: string; mailFrom: string; recipients: string[] }> {
  assert.ok(RELAY_DIR, 'SEALPOST_STACK_RELAY_DIR is not set: start the stack with sealpost-stack --env FILE and source it');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const name of readdirSync(RELAY_DIR).filter((n) => n.endsWith('.json')).sort()) {
      const envelope = JSON.parse(readFileSync(join(RELAY_DIR, name), 'utf8')) as { mailFrom: string; recipients: string[] };
      const eml = join(RELAY_DIR, name.replace(/\.json$/, '.eml'));
      if (!existsSync(eml)) continue;
      const mail = { raw: readFileSync(eml, 'utf8'), ...envelope };
      if (match(mail)) return mail;
    }
    assert.ok(Date.now() < deadline, 'the relay received no such mail in time');
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Presses Tab (Shift+Tab with `back`) until the focused element (the one
 * focused already included) matches
 * `wanted` (`aria-label | placeholder | text or label`, the empty ones left
 * out), at most `max` times:
 * how a person reaches a control with the keyboard alone.
 */
export async function tabTo(page: Page, wanted: RegExp, options: { back?: boolean; max?: number } = {}): Promise<void> {
  const seen: string[] = [];
  for (let i = 0; i <= (options.max ?? 80); i++) {
    // The element focused now counts (a form that took the focus), then one key press per step.
    if (i > 0) await page.keyboard.press(options.back === true ? 'Shift+Tab' : 'Tab');
    const name = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      if (el === null) return '';
      const label = el.closest('label')?.textContent ?? '';
      return [el.getAttribute('aria-label') ?? '', el.getAttribute('placeholder') ?? '', el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement ? label : (el.textContent ?? '')]
        .map((part) => part.replace(/\s+/g, ' ').trim())
        .filter((part) => part !== '')
        .join(' | ');
    });
    seen.push(name);
    if (wanted.test(name)) return;
  }
  assert.fail(`no focusable element matching ${wanted} by keyboard; focus went through: ${seen.join(' → ')}`);
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

// ---- Support (the staff side, with the stack's keyring and token) ----------------------

/** The stack's support keyring (`SEALPOST_STACK_STAFF_KEY_FILE`) and staff token (`SEALPOST_STACK_STAFF_TOKEN`). */
export const STAFF_KEY_FILE = process.env['SEALPOST_STACK_STAFF_KEY_FILE'];
export const STAFF_TOKEN = process.env['SEALPOST_STACK_STAFF_TOKEN'];

/** Runs `sealpost staff ...` as the support team: the stack's keyring and staff token. */
export function staffCli(configDir: string, args: string[]): Promise<string> {
  assert.ok(STAFF_KEY_FILE && STAFF_TOKEN, 'SEALPOST_STACK_STAFF_KEY_FILE and SEALPOST_STACK_STAFF_TOKEN are not set: start the stack with sealpost-stack --env FILE and source it');
  return cli(configDir, ['staff', ...args], { SEALPOST_STAFF_KEY_FILE: STAFF_KEY_FILE, SEALPOST_STAFF_TOKEN: STAFF_TOKEN });
}
