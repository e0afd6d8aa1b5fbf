'use strict';
// What every browser test file shares: a real dedupd seeded through the
// API, Debian's chromium, and pages that record every dialog, script
// error and request to another origin, so a test can fail on any of them.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { chromium } = require('playwright-core');

const { startDedupd, apiClient, REPO } = require('./dedupd');
const { seed } = require('./seed');

// SCREENSHOTS=1 (npm run screenshots) writes into docs/console/.
const SHOTS = process.env.SCREENSHOTS ? path.join(REPO, 'docs', 'console') : fs.mkdtempSync(path.join(os.tmpdir(), 'console-shots-'));

/** Starts dedupd and chromium; close() stops both. */
async function openConsole() {
  const server = await startDedupd();
  const admin = apiClient(server.base, server.tokens.admin);
  await seed(admin);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  fs.mkdirSync(SHOTS, { recursive: true });
  const dialogs = [];
  const pageErrors = [];

  /** A fresh browser context (its own storage), watching for dialogs and errors. */
  async function newPage(viewport = { width: 1280, height: 860 }) {
    const context = await browser.newContext({ viewport, locale: 'en-GB', timezoneId: 'UTC' });
    // No wall-clock deadline on a wait: a loaded machine is slow, not
    // wrong. A wait that never ends is ended by node --test-timeout
    // (package.json), as go test -timeout ends a Go test.
    context.setDefaultTimeout(0);
    const page = await context.newPage();
    page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
    page.on('pageerror', (e) => pageErrors.push(e.message));
    // Every request must stay on dedupd: no font, CDN or other origin.
    page.on('request', (r) => {
      if (!r.url().startsWith(server.base) && !r.url().startsWith('data:')) pageErrors.push(`request off dedupd: ${r.url()}`);
    });
    return page;
  }

  async function signIn(page, token) {
    await page.locator('form.signin').waitFor();
    await page.fill('#token', token);
    await page.click('form.signin button[type=submit]');
    await page.locator('#who').getByText('Sign out').waitFor();
  }

  /** The whole page; only the screen while a dialog is open, whose backdrop covers the screen only. */
  async function shot(page, name) {
    const fullPage = await page.locator('dialog[open]').count() === 0;
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage });
  }

  /** Nothing injected ran or landed: no dialog, no foreign element. */
  async function assertNoInjection(page) {
    assert.deepEqual(dialogs, [], 'a dialog opened');
    assert.equal(await page.locator('img[src="x"]').count(), 0, 'an injected <img> appeared');
    assert.equal(await page.locator('script').count(), 1, 'a script element was added');
    assert.equal(await page.evaluate(() => document.querySelectorAll('[onerror]').length), 0);
  }

  /** No script error, no dialog, no other origin, no token in the log. */
  function assertClean() {
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(dialogs, []);
    for (const token of Object.values(server.tokens)) {
      assert.ok(!server.logs.join('').includes(token), 'a token reached the log');
    }
  }

  /**
   * The call log's line of a finished call of method for consumer with a
   * gRPC code, once dedupd has written it: proof that a console action
   * went through the API's interceptors (auth, limits, metrics, logs).
   */
  async function loggedCall(method, consumer, code) {
    for (;;) {
      const found = server.logs.join('').split('\n').find((l) => l.includes(`"grpc.method":"${method}"`)
        && l.includes(`"consumer":"${consumer}"`) && l.includes(`"grpc.code":"${code}"`));
      if (found) return JSON.parse(found);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async function close() {
    await browser.close();
    await server.stop();
  }

  return { server, admin, newPage, signIn, shot, assertNoInjection, assertClean, loggedCall, close };
}

const recordPath = (consumer, key) => `/console/consumers/${consumer}/records/${encodeURIComponent(key)}`;

module.exports = { openConsole, recordPath };
