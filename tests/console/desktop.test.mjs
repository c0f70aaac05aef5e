// The desktop end to end (issue 16), from tests/integration/test_desktop_e2e.py,
// which starts the server and a sandbox running images/desktop/entrypoint.sh
// (Xvfb, openbox, x11vnc, noVNC on 6080) in the `host` image. Everything goes
// through the official JS SDK's endpoints, with useServerProxy off and on:
//
// - computer use: execd's endpoint (getEndpoint(44772), its URL and headers)
//   and fetch: an xterm with known colours running `cat > FILE` is focused
//   (POST /desktop/windows), a screenshot of it shows only its background
//   and the cursor, POST /desktop/keyboard types "HELLO OSB", and a new
//   screenshot shows foreground pixels in the character cells of the letters
//   (none in the space); the file holds the text.
// - noVNC: getEndpoint(6080) (and the signed URL of port 6080) opened in
//   Debian's Chromium (playwright-core, headless), vnc.html with `path` set
//   to the endpoint's websockify; the canvas shows a magenta window where
//   the X server has it (a screenshot of the page); a click through noVNC
//   moves the pointer there and focuses that window; keys typed into the
//   page reach the program in the window (its file).
//
// Environment: OSB_DOMAIN (127.0.0.1:PORT), OSB_API_KEY, OSB_SANDBOX,
// OSB_SDK_DIR, OSB_SIGNED_6080 (http://... signed URL of port 6080),
// OSB_SHOTS (where page screenshots are kept), OSB_CHROMIUM.
// One JSON line per check: {"check", "ok", "diag"}.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import zlib from "node:zlib";

import { launchOffline } from "./offline.mjs";

const WAIT = 60000;
const report = (check, ok, diag) =>
  console.log(JSON.stringify({ check, ok: !!ok, diag: diag === undefined ? "" : String(diag).slice(0, 1500) }));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const shots = process.env.OSB_SHOTS;
if (shots) fs.mkdirSync(shots, { recursive: true });

// until(fn): fn's first truthy value, polled; throws `what` (with the last
// value seen) after the timeout.
async function until(what, fn, timeout = WAIT, every = 200) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last && !last.notYet) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`${what}: not after ${timeout / 1000} s (last: ${diagOf(last)})`);
    await sleep(every);
  }
}
const diagOf = (v) => (v instanceof Error ? String(v) : JSON.stringify(v)?.slice(0, 600));

// ------------------------------------------------------------------ PNG
// 8-bit RGB or RGBA, not interlaced (execd's and Chromium's screenshots):
// {width, height, px(x, y) -> [r, g, b]}.
function pngDecode(buf) {
  if (buf.readUInt32BE(0) !== 0x89504e47) throw new Error("not a PNG");
  let pos = 8, width, height, channels;
  const idat = [];
  while (pos < buf.length) {
    const n = buf.readUInt32BE(pos), type = buf.toString("latin1", pos + 4, pos + 8);
    const body = buf.subarray(pos + 8, pos + 8 + n);
    if (type === "IHDR") {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const depth = body[8], ctype = body[9];
      if (depth !== 8 || (ctype !== 2 && ctype !== 6) || body[12] !== 0) throw new Error(`PNG type ${depth}/${ctype}`);
      channels = ctype === 6 ? 4 : 3;
    } else if (type === "IDAT") idat.push(body);
    pos += 12 + n;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels, out = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)], line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? out[y * stride + i - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + i] : 0;
      const c = y > 0 && i >= channels ? out[(y - 1) * stride + i - channels] : 0;
      let p = line[i];
      if (f === 1) p += a;
      else if (f === 2) p += b;
      else if (f === 3) p += (a + b) >> 1;
      else if (f === 4) {
        const q = a + b - c, pa = Math.abs(q - a), pb = Math.abs(q - b), pc = Math.abs(q - c);
        p += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[y * stride + i] = p & 255;
    }
  }
  const px = (x, y) => [...out.subarray(y * stride + x * channels, y * stride + x * channels + 3)];
  return { width, height, px };
}
const hex = (rgb) => "#" + rgb.map((v) => v.toString(16).padStart(2, "0")).join("");

// ------------------------------------------------------------------ SDK
const entry = `${process.env.OSB_SDK_DIR}/node_modules/@alibaba-group/opensandbox/dist/index.js`;
const { ConnectionConfig, Sandbox } = await import(pathToFileURL(entry).href);

async function connect(useServerProxy) {
  return Sandbox.connect({
    sandboxId: process.env.OSB_SANDBOX,
    connectionConfig: new ConnectionConfig({
      domain: process.env.OSB_DOMAIN,
      apiKey: process.env.OSB_API_KEY,
      requestTimeoutSeconds: 60,
      useServerProxy,
    }),
    skipHealthCheck: true,
  });
}

// execd's computer-use API at the SDK's endpoint of port 44772.
function desktopClient(ep) {
  const base = `http://${ep.endpoint}`;
  const call = async (method, route, body) => {
    const res = await fetch(base + route, {
      method,
      headers: { ...(ep.headers ?? {}), ...(body ? { "Content-Type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    if (res.status !== 200) throw new Error(`${method} ${route}: ${res.status} ${(await res.text()).slice(0, 300)}`);
    return (res.headers.get("content-type") ?? "").startsWith("image/png")
      ? pngDecode(Buffer.from(await res.arrayBuffer()))
      : res.json();
  };
  return {
    base,
    windows: async () => (await call("GET", "/desktop/windows")).items,
    window: async (title) => (await call("GET", "/desktop/windows")).items.find((w) => w.title === title),
    focus: (id) => call("POST", "/desktop/windows", { action: "focus", id }),
    keyboard: (body) => call("POST", "/desktop/keyboard", body),
    cursor: () => call("GET", "/desktop/cursor"),
    shot: (w) => call("GET", `/desktop/screenshot?x=${w.x}&y=${w.y}&width=${w.width}&height=${w.height}`),
  };
}

// An xterm titled `title` running `cat > file`, started through the SDK's
// commands; its window once listed (and shown: openbox maps it).
async function xterm(sbx, desk, title, file, colours, geometry) {
  const cmd = `exec xterm -T ${title} ${colours} -geometry ${geometry} -e sh -c 'exec cat > ${file}'`;
  await sbx.commands.run(cmd, { background: true });
  return until(`window ${title} is listed`, () => desk.window(title));
}

async function focused(desk, win, what) {
  await desk.focus(win.id);
  return until(what, async () => ((await desk.window(win.title))?.focused ? true : { notYet: true, windows: await desk.windows() }));
}

async function fileIs(sbx, file, want) {
  return until(`${file} holds ${JSON.stringify(want)}`, async () => {
    const got = await sbx.files.readFile(file).catch((e) => `(${e})`);
    return got === want ? true : { notYet: true, got };
  });
}

async function step(name, fn) {
  try {
    const diag = await fn();
    report(name, true, diag);
    return true;
  } catch (e) {
    report(name, false, e?.stack ?? String(e));
    return false;
  }
}

// ------------------------------------------------------------ computer use
const YELLOW = [255, 255, 0], BLUE = [0, 0, 255];
const same = (a, b) => a[0] === b[0] && a[1] === b[1] && a[2] === b[2];

// Where foreground pixels are in a screenshot of the window: their bounding
// box and whether anything else but the two colours shows.
function inkOf(img) {
  let x0 = Infinity, y0 = Infinity, x1 = -1, y1 = -1, other = null, count = 0;
  for (let y = 0; y < img.height; y++)
    for (let x = 0; x < img.width; x++) {
      const p = img.px(x, y);
      if (same(p, BLUE)) {
        count++;
        x0 = Math.min(x0, x); y0 = Math.min(y0, y); x1 = Math.max(x1, x); y1 = Math.max(y1, y);
      } else if (!same(p, YELLOW) && !other) other = { x, y, rgb: hex(p) };
    }
  return { x0, y0, x1, y1, count, other };
}

async function computerUse(sbx, label, n) {
  const ep = await sbx.getEndpoint(44772);
  const desk = desktopClient(ep);
  const title = `osb-editor-${n}`, file = `/tmp/editor-${n}.txt`;
  let win, cell;
  await step(`${label}: the endpoint's headers are what lets a /desktop call in`, async () => {
    const bare = await fetch(`${desk.base}/desktop/cursor`);
    const got = await desk.cursor();
    if (bare.status !== 401 || typeof got.x !== "number") throw new Error(`without: ${bare.status}; with: ${JSON.stringify(got)}`);
    return `headers ${Object.keys(ep.headers ?? {})}`;
  });
  const ok = await step(`${label}: an editor window (xterm, yellow on blue ink) is listed and focused`, async () => {
    win = await xterm(sbx, desk, title, file, "-bg '#ffff00' -fg '#0000ff' -cr '#0000ff'", `40x6+${300 + 40 * n}+${420 + 30 * n}`);
    await focused(desk, win, `${title} focused`);
    return `${desk.base} headers ${Object.keys(ep.headers ?? {}).join(",")}: ${JSON.stringify(win)}`;
  });
  if (!ok) return;
  await step(`${label}: the screenshot before shows the background and only the cursor block`, async () => {
    // The focused xterm draws its cursor as a filled block of one cell at
    // the top left: its size is the size of a character cell.
    const ink = await until("only the cursor block is inked", async () => {
      const i = inkOf(await desk.shot(win));
      const w = i.x1 - i.x0 + 1, h = i.y1 - i.y0 + 1;
      return !i.other && i.count > 0 && i.count === w * h && w < 20 && h < 30 && i.x0 < 10 && i.y0 < 10 ? i : { notYet: true, ...i };
    });
    cell = { x: ink.x0, y: ink.y0, w: ink.x1 - ink.x0 + 1, h: ink.y1 - ink.y0 + 1 };
    return `cell ${JSON.stringify(cell)}`;
  });
  if (!cell) return;
  const text = "HELLO OSB";
  await step(`${label}: POST /desktop/keyboard types "${text}"`, async () => {
    await desk.keyboard({ action: "type", text });
    return "";
  });
  await step(`${label}: the screenshot after shows ink in the cells of the letters, none in the space`, async () => {
    // Cells 0-8 of the first row: a letter inks its cell (fixed fonts draw
    // every capital across it), the space does not; the cursor moved to 9.
    const inked = (img, c) => {
      for (let y = cell.y; y < cell.y + cell.h; y++)
        for (let x = cell.x + c * cell.w; x < cell.x + (c + 1) * cell.w; x++) if (same(img.px(x, y), BLUE)) return true;
      return false;
    };
    const want = [...text, "cursor"].map((ch) => ch !== " ");
    return until("the text's ink", async () => {
      const img = await desk.shot(win);
      const got = want.map((_, c) => inked(img, c));
      const full = [...Array(cell.w * cell.h).keys()].every((i) => same(img.px(cell.x + 9 * cell.w + (i % cell.w), cell.y + Math.floor(i / cell.w)), BLUE));
      return got.every((g, i) => g === want[i]) && full && !inkOf(img).other ? `cells inked ${got.map(Number).join("")}` : { notYet: true, got, full };
    });
  });
  await step(`${label}: enter and ctrl+d end cat; the file holds the text and the window closes`, async () => {
    await desk.keyboard({ action: "press", keys: ["enter"] });
    await desk.keyboard({ action: "press", keys: ["ctrl", "d"] });
    await fileIs(sbx, file, text + "\n");
    await until(`${title} closed`, async () => !(await desk.window(title)));
    return "";
  });
}

// ------------------------------------------------------------------ noVNC
const MAGENTA = [255, 0, 255];

async function novnc(browser, sbx, label, n, url, headers) {
  const desk = desktopClient(await sbx.getEndpoint(44772));
  const u = new URL(url);
  // noVNC opens ws://{page's host}/{path}: the endpoint's path, without its
  // leading slash, plus websockify.
  const wsPath = u.pathname.replace(/^\/+|\/+$/g, "") + "/websockify";
  const page_url = `${url.replace(/\/+$/, "")}/vnc.html?autoconnect=1&resize=off&path=${encodeURIComponent(wsPath)}`;
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, extraHTTPHeaders: headers ?? {} });
  const page = await ctx.newPage();
  // What the page could not load, for the diagnostics of a failed connect.
  const trouble = [];
  page.on("requestfailed", (r) => trouble.push(`${r.url().slice(-60)} failed: ${r.failure()?.errorText}`));
  page.on("response", (r) => r.status() >= 400 && trouble.push(`${r.url().slice(-60)}: ${r.status()}`));
  page.on("websocket", (ws) => {
    trouble.push(`websocket ${ws.url().slice(-60)}`);
    ws.on("close", () => trouble.push("websocket closed"));
    ws.on("socketerror", (e) => trouble.push(`websocket error ${e}`));
  });
  page.on("console", (m) => m.type() === "error" && trouble.push(`console: ${m.text().slice(0, 200)}`));
  const shot = (name) => shots && page.screenshot({ path: path.join(shots, `${name}.png`) }).catch(() => {});
  try {
    let magenta, cyan, rect;
    const ok = await step(`${label}: vnc.html connects (WebSocket path ${wsPath.replace(/[0-9a-z]{20,}/g, "…")})`, async () => {
      magenta = await xterm(sbx, desk, `osb-vnc-m-${n}`, `/tmp/vnc-${n}.txt`, "-bg '#ff00ff'", "40x10+200+150");
      cyan = await xterm(sbx, desk, `osb-vnc-c-${n}`, "/dev/null", "-bg '#00ffff'", "30x8+600+150");
      // Chromium drops every request in flight when an address on the host
      // changes (net::ERR_NETWORK_CHANGED; other tests' sandbox networks
      // come and go): then the page is loaded again. Any other failure is one.
      const loads = [];
      const load = async () => {
        trouble.length = 0;
        loads.push(Date.now());
        await page.goto(page_url, { timeout: WAIT }).catch((e) => trouble.push(`goto: ${e.message.split("\n")[0]}`));
      };
      await load();
      await until("noVNC connected", async () => {
        if (trouble.some((x) => x.includes("ERR_NETWORK_CHANGED"))) {
          await load();
          return { notYet: true };
        }
        const cls = await page.evaluate(() => document.documentElement.className).catch((e) => String(e));
        return cls.includes("noVNC_connected") || { notYet: true, cls, trouble: trouble.slice(-12) };
      }, 3 * WAIT, 250);
      const canvas = page.locator("#noVNC_container canvas");
      const box = await canvas.boundingBox();
      rect = { x: Math.round(box.x), y: Math.round(box.y), width: box.width, height: box.height };
      const size = await canvas.evaluate((c) => [c.width, c.height]);
      if (size[0] !== 1024 || size[1] !== 768 || Math.round(rect.width) !== 1024)
        throw new Error(`canvas ${size} shown ${JSON.stringify(rect)}: not the 1024x768 desktop at 1:1`);
      const again = loads.length > 1 ? `; loaded ${loads.length} times (ERR_NETWORK_CHANGED)` : "";
      return `${page_url.replace(/[0-9a-z]{20,}/g, "…")}; canvas at ${JSON.stringify(rect)}${again}`;
    });
    if (!ok) return void (await shot(`failed-connect-${n}`));
    const at = (w) => ({ x: rect.x + w.x + Math.floor(w.width / 2), y: rect.y + w.y + Math.floor(w.height / 2) });
    await step(`${label}: the page shows the magenta window where X has it`, async () => {
      // A screenshot of the page itself (what a user sees), around the
      // window's centre and just outside its corners.
      return until("magenta on the page", async () => {
        const c = at(magenta);
        const img = pngDecode(await page.screenshot({ clip: { x: rect.x, y: rect.y, width: 1024, height: 768 } }));
        const inside = [[c.x - rect.x, c.y - rect.y], [magenta.x + 5, magenta.y + magenta.height - 5],
          [magenta.x + magenta.width - 5, magenta.y + magenta.height - 5]].map(([x, y]) => hex(img.px(x, y)));
        const cyanAt = hex(img.px(cyan.x + Math.floor(cyan.width / 2), cyan.y + Math.floor(cyan.height / 2)));
        return inside.every((p) => p === "#ff00ff") && cyanAt === "#00ffff" ? `magenta ${inside}, cyan ${cyanAt}` : { notYet: true, inside, cyanAt };
      });
    });
    await shot(`novnc-${n}`);
    await step(`${label}: a click through noVNC moves the pointer and focuses the window`, async () => {
      await focused(desk, cyan, "the cyan window focused through execd first");
      const c = at(magenta);
      await page.mouse.click(c.x, c.y);
      const want = { x: c.x - rect.x, y: c.y - rect.y };
      await until("the pointer where the page was clicked", async () => {
        const got = await desk.cursor();
        return got.x === want.x && got.y === want.y ? true : { notYet: true, got, want };
      });
      await until("the magenta window focused", async () => ((await desk.window(magenta.title))?.focused ? true : { notYet: true, windows: await desk.windows() }));
      return `clicked ${JSON.stringify(want)}`;
    });
    const text = `typed via novnc ${n}`;
    await step(`${label}: keys typed into the page reach the program (its file)`, async () => {
      await page.keyboard.type(text, { delay: 20 });
      await page.keyboard.press("Enter");
      await fileIs(sbx, `/tmp/vnc-${n}.txt`, text + "\n");
      await page.keyboard.press("Control+d");
      await until(`${magenta.title} closed (ctrl+d through noVNC)`, async () => !(await desk.window(magenta.title)));
      return "";
    });
    await shot(`novnc-${n}-after`);
  } finally {
    await ctx.close().catch(() => {});
  }
}

// ------------------------------------------------------------------ main
const browser = await launchOffline(["127.0.0.1", "localhost"]);
try {
  let n = 0;
  for (const useServerProxy of [false, true]) {
    const label = `useServerProxy=${useServerProxy}`;
    let sbx;
    try {
      sbx = await connect(useServerProxy);
    } catch (e) {
      report(`${label}: Sandbox.connect`, false, String(e));
      continue;
    }
    await computerUse(sbx, `computer use, ${label}`, n);
    const ep = await sbx.getEndpoint(6080);
    await novnc(browser, sbx, `noVNC, ${label}`, n, `http://${ep.endpoint}`, ep.headers);
    n++;
    if (!useServerProxy) {
      await novnc(browser, sbx, "noVNC, signed URL", n++, process.env.OSB_SIGNED_6080, {});
    }
    try {
      await sbx.close?.();
    } catch {
      // closing the SDK's transport only
    }
  }
} finally {
  await browser.close();
}
