// Drives a browser inside a sandbox over CDP from outside, through the
// server proxy (tests/integration/test_cdp.py starts the server and the
// sandbox): connectOverCDP to each URL given, open the page served inside the
// sandbox, click its button and read the result it writes; then the same with
// Puppeteer's connect(): browserWSEndpoint, the webSocketDebuggerUrl of the
// URL's /json/version (Puppeteer's browserURL resolves "/json/version"
// against the URL's origin, dropping the /sandboxes/... route, and sends no
// headers there, so it cannot reach a browser behind a path prefix), with
// `headers` given (the proxy passes them on). With OSB_SDK_DIR,
// also the official JS SDK's getEndpoint(9222) with useServerProxy off and on.
// With OSB_CDP_EGRESS ([{url, want}], want "ok" or "blocked") and one URL:
// the browser opens each url and must load it or fail, as the sandbox's
// egress policy says.
// One JSON line per check: {"check", "ok", "diag"}.
import { pathToFileURL } from "node:url";

import { chromium } from "playwright-core";
import puppeteer from "puppeteer-core";

const PAGE = process.env.OSB_CDP_PAGE; // as the sandbox sees it
const report = (check, ok, diag) => console.log(JSON.stringify({ check, ok, diag }));

async function drive(check, url) {
  let browser;
  try {
    browser = await chromium.connectOverCDP(url, { timeout: 30000 });
    const ctx = browser.contexts()[0] ?? (await browser.newContext());
    const page = await ctx.newPage();
    await page.goto(PAGE, { timeout: 30000 });
    await page.click("#go");
    const got = await page.textContent("#result");
    await page.close();
    report(check, got === "clicked", `result '${got}' from ${url}`);
  } catch (e) {
    report(check, false, `${url}: ${String(e).slice(0, 800)}`);
  } finally {
    // Disconnects; a browser connected over CDP keeps running.
    await browser?.close().catch(() => {});
  }
}

// Puppeteer: a ws:// URL is used as it is, an http:// one through its
// /json/version (the rewritten webSocketDebuggerUrl).
async function puppet(check, url) {
  let browser;
  try {
    let ws = url;
    if (!url.startsWith("ws")) {
      const res = await fetch(url.replace(/\/$/, "") + "/json/version");
      ws = (await res.json()).webSocketDebuggerUrl;
    }
    browser = await puppeteer.connect({
      browserWSEndpoint: ws,
      headers: { "X-Osb-Test": "puppeteer" },
      defaultViewport: null,
      protocolTimeout: 30000,
    });
    const page = await browser.newPage();
    await page.goto(PAGE, { timeout: 30000 });
    await page.click("#go");
    const got = await page.$eval("#result", (e) => e.textContent);
    await page.close();
    report(check, got === "clicked", `result '${got}' from ${url} (ws ${ws})`);
  } catch (e) {
    report(check, false, `${url}: ${String(e).slice(0, 800)}`);
  } finally {
    // Disconnects; the browser keeps running.
    await browser?.disconnect().catch(() => {});
  }
}

async function sdk(dir) {
  const entry = `${dir}/node_modules/@alibaba-group/opensandbox/dist/index.js`;
  const { ConnectionConfig, Sandbox } = await import(pathToFileURL(entry).href);
  for (const useServerProxy of [false, true]) {
    const check = `sdk getEndpoint(9222), useServerProxy=${useServerProxy}`;
    try {
      const sbx = await Sandbox.connect({
        sandboxId: process.env.OSB_SANDBOX,
        connectionConfig: new ConnectionConfig({
          domain: process.env.OSB_DOMAIN,
          requestTimeoutSeconds: 30,
          useServerProxy,
        }),
        skipHealthCheck: true,
      });
      const ep = await sbx.getEndpoint(9222);
      await drive(check, `http://${ep.endpoint}`);
      await sbx.close?.();
    } catch (e) {
      report(check, false, String(e).slice(0, 800));
    }
  }
}

async function egress(url, gotos) {
  let browser;
  try {
    browser = await chromium.connectOverCDP(url, { timeout: 30000 });
    const page = await (browser.contexts()[0] ?? (await browser.newContext())).newPage();
    for (const { url: to, want } of gotos) {
      let got;
      try {
        const res = await page.goto(to, { timeout: 15000 });
        got = res && res.ok() ? "ok" : `status ${res?.status()}`;
      } catch (e) {
        got = `blocked: ${String(e).split("\n")[0].slice(0, 200)}`;
      }
      report(`egress: ${to} ${want}`, got.split(":")[0] === want, got);
    }
  } catch (e) {
    report("egress: connectOverCDP", false, String(e).slice(0, 800));
  } finally {
    await browser?.close().catch(() => {});
  }
}

if (process.env.OSB_CDP_EGRESS) {
  await egress(process.argv[2], JSON.parse(process.env.OSB_CDP_EGRESS));
  process.exit(0);
}
for (const url of process.argv.slice(2)) await drive(`connectOverCDP ${url}`, url);
for (const url of process.argv.slice(2)) await puppet(`puppeteer.connect ${url}`, url);
if (process.env.OSB_SDK_DIR) await sdk(process.env.OSB_SDK_DIR);
