// Drives the web console (/console) in Debian's Chromium through
// playwright-core (tests/integration/test_console.py starts the server and
// reads these lines). Prints one JSON line per check:
//   {"check": "...", "ok": true|false, "diag": "..."}
// and keeps a screenshot of each page in OSB_CONSOLE_SHOTS.
// Environment: OSB_URL (http://127.0.0.1:PORT), OSB_KEY, OSB_CONSOLE_SHOTS,
// OSB_CHROMIUM (default /usr/bin/chromium).
import { launchOffline } from "./offline.mjs";
import fs from "node:fs";
import path from "node:path";

const base = process.env.OSB_URL, key = process.env.OSB_KEY;
const shots = process.env.OSB_CONSOLE_SHOTS;
fs.mkdirSync(shots, { recursive: true });
const check = (name, ok, diag) => console.log(JSON.stringify({ check: name, ok: !!ok, diag: diag === undefined ? "" : String(diag) }));
const WAIT = 60000;

const browser = await launchOffline();
const errors = [];
let page;
// A line of the terminal's screen (xterm's DOM renderer: one div a row).
const termLine = (text) => page.locator("#terminal .xterm-rows > div", { hasText: new RegExp("^" + text + "\\s*$") }).first().waitFor({ timeout: WAIT });
async function shot(name) { await page.screenshot({ path: path.join(shots, name + ".png"), fullPage: true }); }
async function step(name, fn) {
  try { await fn(); check(name, true); }
  catch (e) { check(name, false, e.message.split("\n")[0]); try { await shot("failed-" + name.replace(/\W+/g, "_")); } catch (_) { /* closed */ } }
}
try {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await ctx.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
  page = await ctx.newPage();
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  const outside = [];
  page.on("request", (r) => { if (!r.url().startsWith(base) && !r.url().startsWith(base.replace("http", "ws")) && !r.url().startsWith("data:") && !r.url().startsWith("blob:")) outside.push(r.url()); });

  await step("a wrong key is refused", async () => {
    await page.goto(base + "/console");
    await page.fill("#api-key", "not-the-key");
    await page.click("#signin-form button[type=submit]");
    await page.waitForSelector("#flash:not([hidden])", { timeout: WAIT });
    const t = await page.textContent("#flash");
    if (!/Wrong API key/.test(t)) throw new Error("flash says: " + t);
    if (!(await page.isVisible("#signin-form"))) throw new Error("left the sign-in page");
    await shot("signin-refused");
  });
  await step("sign in with the key", async () => {
    await page.fill("#api-key", key);
    await page.click("#signin-form button[type=submit]");
    await page.waitForSelector("#sandbox-rows", { state: "attached", timeout: WAIT });
    await shot("sandboxes-empty");
    errors.length = 0; // the refused key's 401 was meant
  });
  let id = null;
  await step("create a sandbox from the form", async () => {
    await page.selectOption("#create-kind", "image");
    await page.fill("#create-source", "host");
    await page.fill("#create-metadata", "team=console");
    await page.click("#create-button");
    await page.waitForURL(/#\/sandbox\//, { timeout: WAIT });
    id = decodeURIComponent(page.url().split("#/sandbox/")[1]);
    await page.waitForSelector('#sandbox-state:text-is("Running")', { timeout: WAIT });
    await shot("sandbox");
  });
  await step("the list shows it, filtered by state and metadata", async () => {
    await page.goto(base + "/console#/sandboxes");
    await page.selectOption("#filter-state", "Running");
    await page.fill("#filter-metadata", "team=console");
    await page.press("#filter-metadata", "Enter");
    await page.waitForSelector(`tr[data-id="${id}"]`, { timeout: WAIT });
    await page.fill("#filter-metadata", "team=nobody");
    await page.press("#filter-metadata", "Enter");
    await page.waitForSelector(`tr[data-id="${id}"]`, { state: "detached", timeout: WAIT });
    await page.fill("#filter-metadata", "");
    await page.press("#filter-metadata", "Enter");
    await page.waitForSelector(`tr[data-id="${id}"]`, { timeout: WAIT });
    await shot("sandboxes");
  });
  await step("type echo hi in the terminal and read it on the screen", async () => {
    await page.goto(base + "/console#/sandbox/" + encodeURIComponent(id));
    await page.waitForSelector('#terminal-status:text-is("connected")', { timeout: WAIT });
    await page.click("#terminal");
    await page.keyboard.type("echo h''i; echo $((6*7))\n");
    await termLine("hi");
    await termLine("42");
    await shot("terminal");
  });
  await step("copy a selection and paste into the terminal", async () => {
    const row = page.locator("#terminal .xterm-rows > div", { hasText: /^42\s*$/ }).first();
    const box = await row.boundingBox();
    await page.mouse.move(box.x + 1, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + 40, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
    await page.keyboard.press("Control+Shift+C");
    await page.waitForFunction(async () => (await navigator.clipboard.readText()).trim() === "42", null, { timeout: WAIT, polling: 100 }).catch(async () => {
      throw new Error("clipboard holds " + JSON.stringify(await page.evaluate(() => navigator.clipboard.readText())));
    });
    await page.evaluate(() => navigator.clipboard.writeText("echo pas''ted$((40+2))"));
    await page.click("#terminal-paste");
    await page.click("#terminal");
    await page.keyboard.press("Enter");
    await termLine("pasted42");
  });
  await step("the terminal reconnects and keeps its output", async () => {
    await page.click("#terminal-reconnect");
    await page.waitForSelector('#terminal-status:text-is("connected")', { timeout: WAIT });
    await page.click("#terminal");
    await page.keyboard.type("echo again$((1+1))\n");
    await termLine("again2");
    await termLine("hi");
  });
  await step("upload a file and see it listed, then view it", async () => {
    await page.click("button[data-tab=files]");
    await page.fill("#files-dir", "/tmp");
    await page.setInputFiles("#upload-input", { name: "console-upload.txt", mimeType: "text/plain", buffer: Buffer.from("uploaded from the console\n") });
    await page.waitForSelector('tr[data-name="console-upload.txt"]', { timeout: WAIT });
    await page.click('tr[data-name="console-upload.txt"] td:first-child');
    await page.locator("#file-view", { hasText: "uploaded from the console" }).waitFor({ timeout: WAIT });
    await shot("files");
  });
  await step("resource graphs from execd's metrics", async () => {
    await page.click("button[data-tab=resources]");
    await page.locator("#resource-figures", { hasText: /^CPU .* memory / }).waitFor({ timeout: WAIT });
    await shot("resources");
  });
  await step("events and logs", async () => {
    await page.click("button[data-tab=events]");
    await page.locator("#diag-events", { hasText: /Running|created|start/i }).waitFor({ timeout: WAIT });
    await shot("events");
    await page.click("button[data-tab=logs]");
    await page.locator("#diag-logs", { hasText: /\S/ }).and(page.locator("#diag-logs:not(:text-is('loading'))")).waitFor({ timeout: WAIT });
  });
  await step("pause and resume", async () => {
    await page.click("button[data-action=pause]");
    await page.waitForSelector('#sandbox-state:text-is("Paused")', { timeout: WAIT });
    await page.click("button[data-action=resume]");
    await page.waitForSelector('#sandbox-state:text-is("Running")', { timeout: WAIT });
  });
  await step("pools, images and audit pages", async () => {
    await page.goto(base + "/console#/pools");
    await page.locator("#pools-rows tr", { hasText: "console-pool" }).waitFor({ timeout: WAIT });
    await shot("pools");
    await page.goto(base + "/console#/images");
    await page.locator("#images-rows tr", { hasText: "host" }).waitFor({ timeout: WAIT });
    await shot("images");
    await page.goto(base + "/console#/audit");
    await page.locator("#audit-rows tr", { hasText: id }).filter({ hasText: "/pause" }).first().waitFor({ timeout: WAIT });
    await shot("audit");
  });
  // before the kill: after it the page's refresh meets the 404 it shows as "gone"
  check("no script errors in the page", errors.length === 0, errors.join(" | "));
  await step("kill the sandbox", async () => {
    await page.goto(base + "/console#/sandbox/" + encodeURIComponent(id));
    await page.waitForSelector("button[data-action=kill]", { timeout: WAIT });
    await page.click("button[data-action=kill]");
    await page.waitForSelector('#sandbox-state:text-matches("^(gone|Terminated|Stopping)$")', { timeout: WAIT });
    await shot("killed");
  });
  check("no request left the server's origin", outside.length === 0, outside.join(" "));
} finally {
  await browser.close();
}
