'use strict';
// The console in a real browser (Debian's chromium through playwright-core)
// against a real dedupd with auth on: sign in, the pages, the decoded
// results, hostile data shown as text, deep links opened cold, the
// reconciliation queue, a delete through its confirmation, and a reader
// token that sees no action and is refused when it forges one.
// SCREENSHOTS=1 (npm run screenshots) writes the pages' screenshots into
// docs/console/; otherwise they go to a temporary directory. The record
// page in detail, the filters, paging, keyboard and narrow screens are in
// pages.test.js.

const assert = require('node:assert/strict');
const { before, after, describe, it } = require('node:test');

const { openConsole, recordPath } = require('./browser');
const { keys, GATEWAY_BODY } = require('./seed');

describe('dedupd console in chromium', () => {
  let c; // the console under test: server, admin caller, pages
  let server;
  let admin; // API caller with the admin token
  let newPage; let signIn; let shot; let assertNoInjection;

  before(async () => {
    c = await openConsole();
    ({ server, admin, newPage, signIn, shot, assertNoInjection } = c);
  });
  after(async () => {
    if (c) await c.close();
  });

  it('walks the console as an admin', async () => {
    const page = await newPage();
    await page.goto(`${server.base}/console/`);
    // Signed out: the shell, a sign-in form, and no data.
    assert.equal(await page.locator('form.signin').count(), 1);
    assert.ok(!(await page.content()).includes('payments'));
    await shot(page, 'sign-in');
    await signIn(page, server.tokens.admin);
    // The token is in this tab's sessionStorage only: no cookie, no URL.
    assert.deepEqual(await page.context().cookies(), []);
    assert.ok(!page.url().includes(server.tokens.admin));

    // Consumers: counts by state and the oldest expired lease.
    const consumers = page.locator('table.consumers');
    await consumers.waitFor();
    const row = consumers.locator('tr', { hasText: 'payments' });
    assert.match(await row.innerText(), /\t1d \(default\)\tstuck-1 lease ended /); // retention, oldest expired lease
    assert.equal(await consumers.locator('tbody tr').count(), 3); // orders, payments, webhooks
    await shot(page, 'consumers');

    // One consumer, then its records filtered by state.
    await page.click('table.consumers a:text-is("payments")');
    await page.locator('h1', { hasText: 'Consumer payments' }).waitFor();
    await shot(page, 'consumer');
    await page.click('nav.tabs a:text-is("Records")');
    await page.locator('table.records').waitFor();
    await page.selectOption('#f-state', 'completed');
    await page.click('form.filters button[type=submit]');
    await page.waitForURL(/state=completed/);
    await page.locator('table.records').waitFor();
    const listed = await page.locator('table.records a.key').allInnerTexts();
    assert.ok(listed.includes(keys.json) && listed.includes(keys.hostile), listed.join(','));
    assert.ok(!listed.includes(keys.stuck) && !listed.includes(keys.rejected), 'the filter let other states through');
    await shot(page, 'records');

    // The JSON result, pretty-printed with its big number intact.
    await page.click(`table.records a:text-is("${keys.json}")`);
    const json = page.locator('pre.json');
    await json.waitFor();
    const text = await json.innerText();
    assert.match(text, /^\{\n {2}"id": "ch_1",\n {2}"amount": 4200,/);
    assert.match(text, /"big": 12345678901234567890/);
    assert.match(text, /"tags": \[\]\n\}$/);
    await shot(page, 'record-json');

    // The gateway's stored response: status line, headers, body.
    await page.goBack();
    await page.click(`table.records a:text-is("${keys.gateway}")`);
    await page.locator('.http .status-line').waitFor();
    assert.equal(await page.locator('.http .status-line').innerText(), 'HTTP/1.1 201 Created');
    const headers = await page.locator('.http .headers').innerText();
    assert.match(headers, /Location\s+\/orders\/7/);
    assert.match(await page.locator('.http pre.json').innerText(), /"order": 7/);
    assert.ok(!(await page.locator('.http').innerText()).includes('\r'));
    assert.ok(GATEWAY_BODY);
    await shot(page, 'record-gateway');

    // The hostile key and its hostile result are text.
    await page.goBack();
    await page.locator('table.records a.key', { hasText: 'onerror' }).click();
    await page.locator('pre.text').waitFor();
    assert.equal(await page.locator('h1 .key').innerText(), keys.hostile);
    assert.match(await page.locator('pre.text').innerText(), /<\/script><script>alert\(1\)<\/script>/);
    await assertNoInjection(page);
    await shot(page, 'record-hostile');

    // The reconciliation queue lists the expired lease, not the live one.
    await page.click('#nav a:text-is("Reconciliation queue")');
    const queue = page.locator('section.queue', { hasText: 'payments' });
    await queue.waitFor();
    const queued = await queue.locator('a.key').allInnerTexts();
    assert.deepEqual(queued, [keys.stuck]);
    await shot(page, 'queue');

    // Streams: the open gap and the parked event.
    await page.goto(`${server.base}/console/consumers/orders/streams`);
    await page.locator('table.streams').waitFor();
    assert.match(await page.locator('table.streams').innerText(), /open before 3/);
    await page.click('table.streams a:text-is("order-42")');
    await page.locator('table.parked').waitFor();
    assert.match(await page.locator('table.parked tbody tr').first().innerText(), /^3\t/);
    await shot(page, 'stream');
    // Skip the gap (2 is given up), then drop parked event 5.
    await page.click('button:text-is("Skip the gap…")');
    await page.locator('dialog.confirm', { hasText: 'Sequences 2–2' }).waitFor();
    await page.click('dialog.confirm button:text-is("Skip the gap")');
    await page.locator('dl.fields', { hasText: 'last 2–2 (admin)' }).waitFor();
    const stream = await admin('StreamService', 'GetStream', { consumer: 'orders', stream: 'order-42' });
    assert.equal(stream.body.stream.highWater, '2');
    await page.locator('table.parked tbody tr').filter({ has: page.locator('td:first-child:text-is("5")') })
      .locator('button:text-is("Drop…")').click();
    await page.locator('dialog.confirm', { hasText: 'parked event 5 of stream' }).waitFor();
    await page.click('dialog.confirm button:text-is("Drop the event")');
    await page.locator('h2', { hasText: 'Parked events (1,' }).waitFor();
    const parked = await admin('StreamService', 'ListParked', { consumer: 'orders', stream: 'order-42' });
    assert.deepEqual(parked.body.events.map((e) => e.sequence), ['3']);

    await page.click('#nav a:text-is("Stats")');
    await page.locator('table.stats').waitFor();
    assert.match(await page.locator('table.stats').innerText(), /All 3 consumers/);
    assert.match(await page.locator('dl.fields').innerText(), /^Version\n\S+\n/); // the server's build
    await shot(page, 'stats');

    // Shorten the retention: the review names every change and warns.
    await page.goto(`${server.base}/console/consumers/payments`);
    await page.click('button:text-is("Change the retention policy…")');
    await page.fill('#p-completedTtl', '2h');
    await page.click('button:text-is("Review the change…")');
    const review = page.locator('dialog.confirm');
    await review.waitFor();
    const reviewText = await review.innerText();
    assert.match(reviewText, /Keep completed records for\t1d\t2h\tchanges/);
    // 6 completed and 1 rejected keep their expiry; the 2 pending take the new TTLs.
    assert.match(reviewText, /7 stored records keep the expiry they have; 2 pending claims/);
    assert.match(reviewText, /Warning: completed_ttl shrinks from 24h to 2h/);
    await shot(page, 'policy-review');
    await review.locator('button:text-is("Shorten retention")').click();
    await page.locator('dl.fields', { hasText: 'Completed records kept2h' }).waitFor();
    const policy = await admin('AdminService', 'GetPolicy', { consumer: 'payments' });
    assert.equal(policy.body.policy.completedTtl, '7200s');

    // A live lease is named in the delete confirmation.
    await page.goto(`${server.base}${recordPath('payments', keys.live)}`);
    await page.click('button:text-is("Delete this record…")');
    assert.match(await page.locator('dialog.confirm .warning').innerText(), /lease is live \(held by worker-b/);
    await page.keyboard.press('Escape');
    await page.locator('dialog.confirm').waitFor({ state: 'detached' });
    assert.equal((await admin('DedupService', 'Lookup', { consumer: 'payments', key: keys.live })).status, 200, 'Escape deleted');

    // Delete the stuck record through its confirmation.
    await page.goto(`${server.base}${recordPath('payments', keys.stuck)}`);
    await page.click('button:text-is("Delete this record…")');
    const dialog = page.locator('dialog.confirm');
    await dialog.waitFor();
    assert.match(await dialog.innerText(), /stuck-1/);
    await shot(page, 'delete-confirm');
    await dialog.locator('button:text-is("Cancel")').click();
    assert.equal((await admin('DedupService', 'Lookup', { consumer: 'payments', key: keys.stuck })).status, 200, 'Cancel deleted');
    await page.click('button:text-is("Delete this record…")');
    await dialog.locator('button:text-is("Delete the record")').click();
    await page.waitForURL(/\/console\/consumers\/payments\/records$/);
    const gone = await admin('DedupService', 'Lookup', { consumer: 'payments', key: keys.stuck });
    assert.equal(gone.status, 404);
    assert.equal(gone.body.code, 'not_found');
    await c.loggedCall('DeleteRecord', 'payments', 'OK'); // through the API's interceptors
    await assertNoInjection(page);
    await page.context().close();
  });

  it('opens deep links cold, keys of any characters included', async () => {
    const page = await newPage();
    // A fresh tab has no token: the deep link signs in first, then shows
    // the page it names.
    await page.goto(server.base + recordPath('payments', keys.odd));
    await signIn(page, server.tokens.admin);
    await page.locator('pre.text').waitFor();
    assert.equal(await page.locator('h1 .key').innerText(), keys.odd);
    assert.equal(await page.locator('pre.text').innerText(), 'plain text, ünïcode');
    // The links the app makes round-trip the same key.
    await page.goto(`${server.base}/console/consumers/payments/records?prefix=${encodeURIComponent('a/b%')}`);
    await page.click('table.records a.key');
    await page.locator('pre.text').waitFor();
    assert.equal(await page.locator('h1 .key').innerText(), keys.odd);
    // ".." cannot be a path segment; its link carries it in the query.
    await page.goto(`${server.base}/console/consumers/payments/records?prefix=..`);
    await page.click('table.records a.key');
    await page.locator('pre.text').waitFor();
    assert.equal(await page.locator('h1 .key').innerText(), '..');
    assert.match(page.url(), /\/record\?key=\.\.$/);
    // A filtered list, cold: the URL's filters are applied and shown.
    await page.goto(`${server.base}/console/consumers/payments/records?state=pending&lease_expired=true`);
    await page.locator('table.records, p.empty').first().waitFor();
    assert.equal(await page.locator('#f-expired').isChecked(), true);
    assert.equal(await page.locator('#f-state').inputValue(), 'pending');
    const keysShown = await page.locator('table.records a.key').allInnerTexts();
    assert.ok(!keysShown.includes(keys.live), 'a live lease is not in the expired filter');
    await assertNoInjection(page);
    await page.context().close();
  });

  it('shows a reader token no action, and the API refuses the ones it forges', async () => {
    const page = await newPage({ width: 390, height: 844 });
    await page.goto(`${server.base}/console/`);
    await signIn(page, server.tokens.reader);
    await page.locator('a:text-is("payments")').first().waitFor();
    const body = await page.locator('main').innerText();
    assert.ok(!body.includes('webhooks') && !body.includes('orders'), 'a scoped token saw other consumers');
    await page.goto(server.base + recordPath('payments', keys.json));
    await page.locator('pre.json').waitFor();
    assert.equal(await page.locator('button', { hasText: /Delete|Drop|Skip|Change/ }).count(), 0);
    await shot(page, 'record-narrow');
    // Forge the actions from the page, with the token it holds.
    const forged = await page.evaluate(async (key) => {
      const token = sessionStorage.getItem('dedupd.console.token');
      const post = async (path, body) => {
        const r = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
        return { status: r.status, code: (await r.json()).code };
      };
      return {
        del: await post('/dedup.v1.AdminService/DeleteRecord', { consumer: 'payments', key }),
        policy: await post('/dedup.v1.AdminService/SetPolicy', { policy: { consumer: 'payments', completedTtl: '1s' } }),
        other: await post('/dedup.v1.DedupService/ListRecords', { consumer: 'webhooks' }),
      };
    }, keys.json);
    assert.deepEqual(forged, {
      del: { status: 403, code: 'permission_denied' },
      policy: { status: 403, code: 'permission_denied' },
      other: { status: 403, code: 'permission_denied' },
    });
    assert.equal((await admin('DedupService', 'Lookup', { consumer: 'payments', key: keys.json })).status, 200);
    await c.loggedCall('DeleteRecord', 'payments', 'PermissionDenied');
    // Another consumer's page shows the API's refusal.
    await page.goto(`${server.base}/console/consumers/webhooks/records`);
    await page.locator('.error').waitFor();
    assert.match(await page.locator('.error').innerText(), /permission_denied PERMISSION_DENIED/);
    await page.context().close();
  });

  it('ran no script error, opened no dialog and asked nothing of another origin', () => {
    c.assertClean();
  });
});
