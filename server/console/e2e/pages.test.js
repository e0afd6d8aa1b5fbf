'use strict';
// The console's pages in detail, in chromium against a real dedupd: every
// field of a record (times as dates and as "ago", the lease, a rejection,
// a hex dump), keys of any characters the API allows opened from the
// links the console makes, the time-range filter and keyset paging, the
// reconciliation queue's order, the loading and empty states, a delete
// done by keyboard alone, and the pages on a 390 px wide screen.

const assert = require('node:assert/strict');
const { before, after, describe, it } = require('node:test');

const { openConsole, recordPath } = require('./browser');
const { claim, complete, digest, keys } = require('./seed');

// Valid keys (UTF-8, no NUL, at most 512 bytes) that trip up URLs: dot
// segments and their escapes, separators, escapes, white space, control
// characters, two normal forms of one letter, a right-to-left override,
// markup, and the longest keys in bytes and in characters.
const UNUSUAL = [
  '.', '...', '%2e', '.%2E', '%2e%2e', '/', '//', 'a/../b', './x', 'back\\slash', '100%', 'a?b#c&d=e',
  '+plus+ space', ' leading and trailing ', 'tab\tnew\nline', 'cr\r\nlf', '\u0001\u007f', '\uFEFFbom',
  '\u00e9', 'e\u0301', '\u202Eevil.exe', '<b>bold</b>', "'); DROP TABLE records; --",
  'x'.repeat(512), '\u{1F511}'.repeat(128),
];

describe('dedupd console pages in detail', () => {
  let c;
  let base;
  let betweenSeeds; // an RFC 3339 time after the unusual keys, before late-1

  before(async () => {
    c = await openConsole();
    base = c.server.base;
    for (const k of UNUSUAL) await complete(c.admin, 'keys', k, `result of ${k}`);
    // late-1 is created in a later whole second than every other record,
    // so a datetime-local input (seconds) can fall between them.
    const next = Math.ceil((Date.now() + 1) / 1000) * 1000;
    betweenSeeds = new Date(next).toISOString().replace('.000Z', 'Z');
    while (Date.now() <= next) await new Promise((r) => setTimeout(r, 50));
    await complete(c.admin, 'keys', 'late-1', '{"late":true}');
    // Two claims left to expire, their keys in the opposite order of
    // their leases' ends: the queue lists the older lease first.
    await claim(c.admin, 'reconcile', 'b-lease-ended-first', '1s', 'worker-1');
    await claim(c.admin, 'reconcile', 'a-lease-ended-later', '2s', 'worker-2');
    for (;;) {
      const q = await c.admin('DedupService', 'ListRecords', { consumer: 'reconcile', leaseExpired: true });
      if ((q.body.records || []).length === 2) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  });
  after(async () => {
    if (c) await c.close();
  });

  async function signedIn(viewport) {
    const page = await c.newPage(viewport);
    await page.goto(`${base}/console/`);
    await c.signIn(page, c.server.tokens.admin);
    return page;
  }

  const fieldOf = (page, term) => page.locator('dl.fields > dt', { hasText: term }).first().locator('xpath=following-sibling::dd[1]');
  const AGO = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \((now|\d+ (s|min) ago)\)$/;

  it('shows every field of a record, decoded', async () => {
    const page = await signedIn();
    await page.goto(base + recordPath('payments', keys.live));
    await page.locator('dl.fields').first().waitFor();
    assert.match(await fieldOf(page, 'Created').innerText(), AGO);
    assert.match(await fieldOf(page, 'Changed').innerText(), AGO);
    assert.match(await fieldOf(page, 'Lease ends').innerText(), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(in \d+ min\) live$/);
    assert.equal(await fieldOf(page, 'Owner').innerText(), 'worker-b');
    assert.equal(await fieldOf(page, 'Fencing token').innerText(), '1');
    assert.equal(await fieldOf(page, 'Attempts').innerText(), '1');
    assert.equal(await fieldOf(page, 'Digest').innerText(), digest(keys.live).toString('hex'));

    await page.goto(base + recordPath('payments', keys.rejected));
    await page.locator('h2', { hasText: 'Rejection' }).waitFor();
    assert.equal(await fieldOf(page, 'Reason').innerText(), 'CARD_DECLINED');
    assert.equal(await fieldOf(page, 'Message').innerText(), 'the card was declined');
    assert.equal(await fieldOf(page, 'Retryable').innerText(), 'no');

    await page.goto(base + recordPath('payments', keys.binary));
    const binary = page.locator('[data-kind=binary]');
    await binary.waitFor();
    assert.match(await binary.innerText(), /Not text: 7 bytes, as a hex dump\./);
    assert.equal(await binary.locator('pre.hex').textContent(),
      '00000000  00 01 02 ff fe 41 42                             |.....AB|');
    await page.context().close();
  });

  it('opens every key the API allows from the links it makes', async () => {
    const page = await signedIn();
    await page.goto(`${base}/console/consumers/keys/records?page_size=1000`);
    await page.locator('table.records').waitFor();
    const links = await page.locator('table.records a.key').evaluateAll(
      (as) => as.map((a) => ({ href: a.getAttribute('href'), key: a.textContent })));
    assert.deepEqual(links.map((l) => l.key).sort(), [...UNUSUAL, 'late-1'].sort());
    for (const { href, key } of links) {
      await page.goto(base + href); // cold: a fresh load of the link
      const shown = page.locator('h1 .key');
      await shown.waitFor();
      assert.equal(await shown.textContent(), key, `the link ${href}`);
      assert.equal(await page.locator('dl.fields code.key').textContent(), key, `the Key field of ${href}`);
    }
    c.assertClean();
    await page.context().close();
  });

  it('filters by time range and pages with the API tokens', async () => {
    const page = await signedIn();
    await page.goto(`${base}/console/consumers/keys/records`);
    await page.locator('table.records').waitFor();
    await page.click('summary:text-is("Created or changed in a time range")');
    await page.fill('#f-created_after', betweenSeeds.slice(0, 19));
    await page.click('form.filters button[type=submit]');
    await page.waitForURL((u) => u.searchParams.get('created_after') === betweenSeeds);
    await page.locator('table.records').waitFor();
    assert.deepEqual(await page.locator('table.records a.key').allTextContents(), ['late-1']);
    // The same bound, cold, as the upper one.
    await page.goto(`${base}/console/consumers/keys/records?created_before=${betweenSeeds}&page_size=1000`);
    await page.locator('table.records').waitFor();
    assert.equal(await page.locator('#f-created_before').inputValue(), betweenSeeds.slice(0, 19));
    assert.equal(await page.locator('table.records a.key').count(), UNUSUAL.length);
    // Nothing changed after late-1: the empty state, not an empty table.
    await page.goto(`${base}/console/consumers/keys/records?updated_after=2999-01-01T00:00:00Z`);
    await page.locator('p.empty', { hasText: 'No record matches these filters.' }).waitFor();
    assert.equal(await page.locator('table.records').count(), 0);

    // Keyset paging through payments, 4 records a page: every record once.
    const all = (await c.admin('DedupService', 'ListRecords', { consumer: 'payments', pageSize: 1000 })).body.records.map((r) => r.key);
    await page.goto(`${base}/console/consumers/payments/records?page_size=4`);
    const seen = [];
    for (;;) {
      await page.locator('table.records').waitFor();
      seen.push(...await page.locator('table.records a.key').allTextContents());
      const next = page.locator('nav.pager a[rel=next]');
      if (await next.count() === 0) break;
      const before = page.url();
      await next.click();
      await page.waitForURL((u) => u.href !== before && u.searchParams.has('page_token'));
      assert.equal(await page.locator('nav.pager a', { hasText: 'First page' }).count(), 1);
    }
    assert.deepEqual(seen, all);
    assert.ok(all.length > 8, `payments has ${all.length} records: paging was not exercised`);
    await page.context().close();
  });

  it('lists the reconciliation queue oldest lease first, not in key order', async () => {
    const page = await signedIn();
    await page.goto(`${base}/console/queue`);
    const queue = page.locator('section.queue', { hasText: 'reconcile' });
    await queue.waitFor();
    assert.deepEqual(await queue.locator('a.key').allTextContents(), ['b-lease-ended-first', 'a-lease-ended-later']);
    assert.match(await queue.locator('tbody tr').first().innerText(), /worker-1/);
    await page.goto(`${base}/console/queue?consumer=reconcile`);
    await page.locator('h1', { hasText: 'Reconciliation queue of reconcile' }).waitFor();
    assert.deepEqual(await page.locator('table.queue a.key').allTextContents(), ['b-lease-ended-first', 'a-lease-ended-later']);
    await page.context().close();
  });

  it('shows a loading state until the API answers', async () => {
    const page = await signedIn();
    let release;
    const held = new Promise((r) => { release = r; });
    await page.route('**/dedup.v1.DedupService/ListRecords', async (route) => { await held; await route.continue(); });
    await page.goto(`${base}/console/consumers/webhooks/records`);
    await page.locator('main p.loading[role=status]').waitFor();
    assert.equal(await page.locator('table.records').count(), 0);
    release();
    await page.locator('table.records').waitFor();
    assert.equal(await page.locator('main p.loading').count(), 0);
    await page.context().close();
  });

  it('is usable by keyboard alone', async () => {
    const page = await c.newPage();
    await page.goto(`${base}/console/`);
    await page.locator('#token').waitFor();
    assert.equal(await page.evaluate(() => document.activeElement.id), 'token', 'the sign-in form has the focus');
    await page.keyboard.type(c.server.tokens.admin);
    await page.keyboard.press('Enter');
    await page.locator('table.consumers').waitFor();
    assert.equal(await page.evaluate(() => document.activeElement.id), 'main', 'the focus went with the sign-in form');
    // A page loaded cold starts with the skip link, which skips (it does
    // not reload the page).
    await page.reload();
    await page.locator('table.consumers').waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Skip to content');
    await page.evaluate(() => {
      document.querySelector('table.consumers').dataset.mark = 'before';
      window.hashed = new Promise((r) => { window.addEventListener('hashchange', r, { once: true }); });
    });
    await page.keyboard.press('Enter');
    await page.evaluate(() => window.hashed); // after popstate, which would redraw
    assert.equal(await page.evaluate(() => document.activeElement.id), 'main');
    assert.equal(await page.locator('table.consumers[data-mark=before]').count(), 1, 'the skip link redrew the page');

    await page.goto(`${base}/console/consumers/keys/records`);
    await page.locator('#f-prefix').focus();
    await page.keyboard.type('late-');
    await page.keyboard.press('Enter');
    await page.waitForURL(/prefix=late-/);
    await page.locator('table.records').waitFor();
    // The form is gone with the old page: the focus is on the new one.
    assert.equal(await page.evaluate(() => document.activeElement.id), 'main');
    await tabTo(page, 'late-1');
    await page.keyboard.press('Enter');
    await page.locator('h1 .key', { hasText: 'late-1' }).waitFor();
    await tabTo(page, 'Delete this record…');
    await page.keyboard.press('Enter');
    await page.locator('dialog.confirm').waitFor();
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Cancel', 'Enter must not destroy');
    await page.keyboard.press('Enter');
    await page.locator('dialog.confirm').waitFor({ state: 'detached' });
    assert.equal((await c.admin('DedupService', 'Lookup', { consumer: 'keys', key: 'late-1' })).status, 200);
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Delete this record…', 'the focus is back where it was');
    await page.keyboard.press('Enter');
    await page.locator('dialog.confirm').waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Delete the record');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/consumers\/keys\/records$/);
    assert.equal((await c.admin('DedupService', 'Lookup', { consumer: 'keys', key: 'late-1' })).status, 404);
    await page.context().close();
  });

  it('fits a 390 px wide screen', async () => {
    const page = await signedIn({ width: 390, height: 844 });
    const pages = ['/console/', '/console/consumers/payments', '/console/consumers/payments/records',
      recordPath('payments', keys.gateway), '/console/queue', '/console/consumers/orders/streams',
      '/console/consumers/orders/streams/order-42', '/console/stats'];
    for (const p of pages) {
      await page.goto(base + p);
      await page.locator('main .page').waitFor();
      // Wide tables scroll in their own box; the page itself never does.
      const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
      assert.ok(scroll <= client, `${p} is ${scroll} px wide on a ${client} px screen`);
      // The pages' links are one line under the brand, not a column.
      const tops = await page.locator('#nav a').evaluateAll((as) => as.map((a) => Math.round(a.getBoundingClientRect().top)));
      assert.equal(new Set(tops).size, 1, `${p}: the page links are on ${new Set(tops).size} lines`);
    }
    await page.goto(`${base}/console/consumers/payments/records`);
    await page.locator('table.records').waitFor();
    // A key column keeps room for a key: "charge-42" on one line.
    const box = await page.locator('table.records a.key', { hasText: 'charge-42' }).boundingBox();
    const line = await page.locator('table.records td').first().evaluate((td) => parseFloat(getComputedStyle(td).lineHeight));
    assert.ok(box.height < 2 * line, `charge-42 wraps onto ${Math.round(box.height / line)} lines`);
    await c.shot(page, 'records-narrow');
    await page.context().close();
  });
});

/** Presses Tab until the focused element's text is text; fails after 60. */
async function tabTo(page, text) {
  for (let i = 0; i < 60; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate(() => document.activeElement.textContent) === text) return;
  }
  assert.fail(`Tab never reached "${text}"`);
}
