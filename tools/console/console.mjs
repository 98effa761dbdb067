// Drives the gateway's admin console (server/console) in Debian's
// Chromium with playwright-core, as an operator would: logs in as a viewer
// and as an admin, browses and filters the catalog, tries arguments and
// invokes the tool with them, approves a held upstream change, filters
// the audit log and replays it against a candidate policy. It prints one
// JSON report: each step's ARIA snapshot (the
// structure the Go test compares with its golden files) and what it read,
// or the error.
//
// Environment: FLOWDROP_CONSOLE_URL (the admin listener's base URL),
// FLOWDROP_CONSOLE_ADMIN_KEY and FLOWDROP_CONSOLE_VIEWER_KEY (API keys:
// passed in the environment, not argv), CHROMIUM (default
// /usr/bin/chromium: no browser is downloaded),
// FLOWDROP_CONSOLE_REPLAY_POLICY (a candidate policy file to paste on the
// replay page), and optionally
// FLOWDROP_CONSOLE_SCREENSHOTS, a directory for PNG screenshots.
import { readFile } from 'node:fs/promises';
import { chromium } from 'playwright-core';

const base = process.env.FLOWDROP_CONSOLE_URL;
const adminKey = process.env.FLOWDROP_CONSOLE_ADMIN_KEY;
const viewerKey = process.env.FLOWDROP_CONSOLE_VIEWER_KEY;
const shots = process.env.FLOWDROP_CONSOLE_SCREENSHOTS;
const replayPolicy = process.env.FLOWDROP_CONSOLE_REPLAY_POLICY;
const report = { snapshots: {}, read: {}, error: null };

async function snap(page, name, selector = 'main') {
  report.snapshots[name] = await page.locator(selector).ariaSnapshot();
  if (shots) await page.screenshot({ path: `${shots}/console-${name}.png`, fullPage: true });
}

async function login(page, key) {
  await page.goto(base + '/console/');
  if (!page.url().endsWith('/console/login')) throw new Error(`not sent to the login page: ${page.url()}`);
  await page.getByLabel(/API key or bearer token/).fill(key);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(base + '/console/');
}

let browser;
try {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
  // The viewer: read-only pages, no approve button.
  const viewer = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await viewer.goto(base + '/console/');
  await snap(viewer, 'login');
  await login(viewer, viewerKey);
  await viewer.getByRole('link', { name: 'Pending changes' }).click();
  await snap(viewer, 'viewer-pending');
  report.read.viewerApproveButtons = await viewer.getByRole('button', { name: /^Approve/ }).count();
  await viewer.getByRole('button', { name: 'Log out' }).click();
  await viewer.waitForURL(base + '/console/login');
  report.read.afterLogout = new URL(viewer.url()).pathname;

  // The admin.
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await login(page, adminKey);
  await snap(page, 'overview');
  await page.getByRole('link', { name: 'Catalog' }).click();
  await page.getByLabel('Filter by name or description').fill('note');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/\/console\/tools\?q=note$/);
  await snap(page, 'catalog-filtered', '#catalog');
  await page.getByRole('link', { name: 'create_note', exact: true }).click();
  await page.getByLabel(/^Arguments/).fill('{"title":"Tom &amp;amp; Jerry","tags":"[\\"cartoon\\",\\"classic\\"]"}');
  await page.getByRole('button', { name: 'Normalize and validate' }).click();
  await snap(page, 'try-result', '#result');
  report.read.verdict = await page.locator('#verdict').innerText();
  // Invoke: a real call of the tool as the logged-in operator.
  await page.getByRole('button', { name: 'Invoke' }).click();
  await page.waitForURL(/\/console\/tools\/create_note\/invoke$/);
  await snap(page, 'invoke-result', '#invoked');
  report.read.outcome = await page.locator('#outcome').innerText();
  await page.getByRole('link', { name: 'repair analytics', exact: true }).click();
  await page.waitForURL(/\/console\/repairs\?tool=create_note$/);
  await snap(page, 'repairs-tool');
  await page.getByRole('link', { name: 'Pending changes' }).click();
  await snap(page, 'pending');
  await page.getByRole('button', { name: 'Approve weather.forecast' }).click();
  await page.waitForURL(/\/console\/pending\?approved=/);
  await snap(page, 'approved');
  report.read.notice = await page.getByRole('status').innerText();
  await page.getByRole('link', { name: 'Audit' }).click();
  await page.getByLabel('tool').fill('weather.forecast');
  await page.getByLabel('decision').selectOption('allow');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/\/console\/audit\?/);
  await snap(page, 'audit-filtered', '#audit');
  // Policy replay: the audit tail against a pasted candidate policy.
  await page.getByRole('link', { name: 'Policy replay' }).click();
  await page.getByLabel(/^Candidate policy file/).fill(await readFile(replayPolicy, 'utf8'));
  await page.getByRole('button', { name: 'Replay' }).click();
  await page.waitForURL(base + '/console/replay');
  await snap(page, 'replay-changes', '#changes');
  report.read.replaySummary = await page.locator('#replay-summary').innerText();
} catch (e) {
  report.error = { name: e.name, message: String(e.message).slice(0, 4000) };
} finally {
  if (browser) await browser.close();
}
process.stdout.write(JSON.stringify(report) + '\n');
process.exit(report.error ? 2 : 0);
