/* The OpenSandbox web console: one page, no framework. It talks to the
 * server it is served by (same origin) with the API key the user typed,
 * kept in sessionStorage for this tab only. execd (files, terminal,
 * resource figures) is reached through a signed URL of port 44772
 * (GET .../endpoints/44772?expires=...), because a browser WebSocket cannot
 * send the token header. Every value from the server goes into the page
 * as text (el() below), never as HTML. */
(function () {
  "use strict";
  const KEY = "osb-console-key";
  const EXECD = 44772;
  const main = document.getElementById("main");
  const state = { key: sessionStorage.getItem(KEY), timers: [], cleanup: [] };

  /* ---- small DOM helpers ---- */
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else if (k === "text") e.textContent = v;
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of kids.flat()) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
    return e;
  }
  function flash(msg, ok) {
    const f = document.getElementById("flash");
    f.textContent = msg;
    f.className = ok ? "ok" : "";
    f.hidden = !msg;
  }
  function every(ms, fn) {
    fn();
    state.timers.push(setInterval(fn, ms));
  }
  function leavePage() {
    state.timers.forEach(clearInterval);
    state.timers = [];
    state.cleanup.forEach((f) => { try { f(); } catch (e) { /* closing anyway */ } });
    state.cleanup = [];
    main.replaceChildren();
  }
  const fmtTime = (t) => (t ? new Date(t).toLocaleString() : "");
  const fmtBytes = (n) => (n < 1024 ? n + " B" : n < 1 << 20 ? (n / 1024).toFixed(1) + " KiB"
    : n < 1 << 30 ? (n / 1048576).toFixed(1) + " MiB" : (n / 1073741824).toFixed(2) + " GiB");

  /* ---- the API ---- */
  class ApiError extends Error {
    constructor(status, code, message) { super(code ? code + ": " + message : message); this.status = status; this.code = code; }
  }
  async function call(url, opts) {
    const r = await fetch(url, opts);
    const text = await r.text();
    let body = null;
    if (text) { try { body = JSON.parse(text); } catch (e) { body = text; } }
    if (!r.ok) {
      const code = body && body.code, msg = body && body.message;
      throw new ApiError(r.status, code, msg || (typeof body === "string" && body) || "HTTP " + r.status);
    }
    return body;
  }
  async function api(method, path, body) {
    const headers = { "OPEN-SANDBOX-API-KEY": state.key || "" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    try {
      return await call("/v1" + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (e) {
      if (e.status === 401) signOut("The server refused the API key (" + e.message + ").");
      throw e;
    }
  }
  /* execd's base URL through a signed endpoint, renewed before it ends. */
  const execdCache = new Map();
  async function execd(id) {
    const now = Math.floor(Date.now() / 1000), c = execdCache.get(id);
    if (c && c.until - 60 > now) return c.base;
    const until = now + 600;
    const ep = await api("GET", `/sandboxes/${encodeURIComponent(id)}/endpoints/${EXECD}?expires=${until}`);
    const at = ep.endpoint.indexOf("/sandboxes/");
    const base = location.origin + ep.endpoint.slice(at);
    execdCache.set(id, { base, until });
    return base;
  }

  /* ---- sign in ---- */
  function signOut(why) {
    sessionStorage.removeItem(KEY);
    state.key = null;
    location.hash = "#/signin";
    route();
    if (why) flash(why);
  }
  function signIn() {
    document.getElementById("top").hidden = true;
    const input = el("input", { type: "password", id: "api-key", placeholder: "API key", autocomplete: "off", required: true });
    const form = el("form", { class: "signin", id: "signin-form" },
      el("h1", { text: "OpenSandbox console" }),
      el("p", { class: "muted", text: "Sign in with the server's API key. It stays in this tab only." }),
      input, el("button", { class: "primary", type: "submit", text: "Sign in" }));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      state.key = input.value;
      try {
        await call("/v1/sandboxes?pageSize=1", { headers: { "OPEN-SANDBOX-API-KEY": state.key } });
        sessionStorage.setItem(KEY, state.key);
        flash("");
        location.hash = "#/sandboxes";
      } catch (e) {
        state.key = null;
        flash(e.status === 401 ? "Wrong API key: " + e.message : "Sign-in failed: " + e.message);
      }
    });
    main.append(form);
    input.focus();
  }

  /* ---- sandboxes ---- */
  const STATES = ["", "Pending", "Running", "Pausing", "Paused", "Stopping", "Terminated", "Failed"];
  function sandboxesPage() {
    const stateSel = el("select", { id: "filter-state" }, STATES.map((s) => el("option", { value: s, text: s || "any state" })));
    const meta = el("input", { id: "filter-metadata", placeholder: "metadata k=v&k2=v2", size: 24 });
    const live = el("input", { type: "checkbox", id: "live", checked: true });
    const tbody = el("tbody", { id: "sandbox-rows" });
    const count = el("span", { class: "muted", id: "sandbox-count" });
    async function load() {
      const q = new URLSearchParams({ pageSize: "200" });
      if (stateSel.value) q.append("state", stateSel.value);
      if (meta.value.trim()) q.append("metadata", meta.value.trim());
      try {
        const r = await api("GET", "/sandboxes?" + q);
        count.textContent = `${r.pagination ? r.pagination.totalItems : r.items.length} sandboxes`;
        tbody.replaceChildren(...r.items.map((s) => el("tr", { class: "link", "data-id": s.id, onclick: () => { location.hash = "#/sandbox/" + s.id; } },
          el("td", { class: "mono", text: s.id }),
          el("td", {}, el("span", { class: "state " + s.status.state, text: s.status.state })),
          el("td", { text: s.image ? s.image.uri : s.snapshotId ? "snapshot " + s.snapshotId : "" }),
          el("td", { class: "mono", text: Object.entries(s.metadata || {}).map(([k, v]) => k + "=" + v).join(" ") }),
          el("td", { text: fmtTime(s.createdAt) }),
          el("td", { text: fmtTime(s.expiresAt) }))));
      } catch (e) { flash("List: " + e.message); }
    }
    stateSel.addEventListener("change", load);
    meta.addEventListener("change", load);
    meta.addEventListener("keydown", (ev) => { if (ev.key === "Enter") load(); });
    main.append(el("h1", { text: "Sandboxes" }),
      el("div", { class: "row" }, stateSel, meta, el("label", {}, live, " live"), count),
      el("table", {}, el("thead", {}, el("tr", {}, ["Id", "State", "Source", "Metadata", "Created", "Expires"].map((h) => el("th", { text: h })))), tbody),
      createForm());
    every(3000, () => { if (live.checked) load(); });
  }
  function createForm() {
    const kind = el("select", { id: "create-kind" }, el("option", { value: "image", text: "image" }),
      el("option", { value: "snapshot", text: "snapshot" }), el("option", { value: "pool", text: "pool" }));
    const source = el("input", { id: "create-source", placeholder: "image, snapshot id or pool name", required: true, size: 28 });
    const entry = el("input", { id: "create-entrypoint", value: "tail -f /dev/null", size: 18 });
    const timeout = el("input", { id: "create-timeout", type: "number", min: 60, value: 3600, size: 6 });
    const meta = el("input", { id: "create-metadata", placeholder: "metadata k=v,k2=v2", size: 18 });
    const form = el("form", { class: "row", id: "create-form" }, kind, source,
      el("label", {}, "entrypoint ", entry), el("label", {}, "timeout s ", timeout), meta,
      el("button", { class: "primary", type: "submit", id: "create-button", text: "Create" }));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const body = { timeout: Number(timeout.value), resourceLimits: { cpu: "1", memory: "1Gi" } };
      const m = {};
      for (const kv of meta.value.split(",").map((s) => s.trim()).filter(Boolean)) {
        const i = kv.indexOf("=");
        if (i < 1) { flash("metadata: want k=v pairs separated by commas"); return; }
        m[kv.slice(0, i)] = kv.slice(i + 1);
      }
      if (Object.keys(m).length) body.metadata = m;
      const argv = entry.value.trim().split(/\s+/).filter(Boolean);
      if (kind.value === "image") { body.image = { uri: source.value.trim() }; body.entrypoint = argv; }
      else if (kind.value === "snapshot") body.snapshotId = source.value.trim();
      else { body.extensions = { poolRef: source.value.trim() }; body.entrypoint = argv; }
      try {
        const r = await api("POST", "/sandboxes", body);
        flash("Created " + r.id, true);
        location.hash = "#/sandbox/" + r.id;
      } catch (e) { flash("Create: " + e.message); }
    });
    return el("div", {}, el("h2", { text: "Create a sandbox" }), form);
  }

  /* ---- one sandbox ---- */
  function sandboxPage(id) {
    const enc = encodeURIComponent(id);
    const info = el("dl", { class: "grid", id: "sandbox-info" });
    const title = el("h1", { text: "Sandbox " + id });
    const actions = el("div", { class: "row", id: "sandbox-actions" });
    const tabBar = el("div", { class: "tabs" });
    const panel = el("div", { class: "panel", id: "tab-panel" });
    let current = null, sbx = null;
    async function load() {
      try {
        sbx = await api("GET", "/sandboxes/" + enc);
        const rows = [["State", el("span", { class: "state " + sbx.status.state, id: "sandbox-state", text: sbx.status.state })],
          ["Reason", [sbx.status.reason, sbx.status.message].filter(Boolean).join(": ")],
          ["Source", sbx.image ? sbx.image.uri : sbx.snapshotId || ""], ["Entrypoint", (sbx.entrypoint || []).join(" ")],
          ["Created", fmtTime(sbx.createdAt)], ["Expires", fmtTime(sbx.expiresAt)],
          ["Metadata", Object.entries(sbx.metadata || {}).map(([k, v]) => k + "=" + v).join(", ")]];
        info.replaceChildren(...rows.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", {}, v)]));
      } catch (e) {
        if (e.status === 404) { info.replaceChildren(el("dt", { text: "State" }), el("dd", { id: "sandbox-state", text: "gone" })); sbx = null; }
        else flash(e.message);
      }
    }
    const act = (label, fn, cls) => el("button", { type: "button", class: cls, "data-action": label.toLowerCase(), text: label, onclick: async () => {
      try { await fn(); flash(label + ": done", true); } catch (e) { flash(label + ": " + e.message); }
      load();
    } });
    actions.append(
      act("Pause", () => api("POST", `/sandboxes/${enc}/pause`)),
      act("Resume", () => api("POST", `/sandboxes/${enc}/resume`)),
      act("Renew", () => api("POST", `/sandboxes/${enc}/renew-expiration`, { expiresAt: new Date(Date.now() + 3600e3).toISOString() })),
      act("Snapshot", async () => { const s = await api("POST", `/sandboxes/${enc}/snapshots`, {}); flash("Snapshot " + s.id, true); }),
      act("Kill", async () => { await api("DELETE", "/sandboxes/" + enc); }, "danger"));
    const tabs = { Terminal: terminalTab, Files: filesTab, Resources: resourcesTab, Endpoints: endpointsTab, Events: diagTab("events"), Logs: diagTab("logs"), Audit: auditTab };
    for (const name of Object.keys(tabs)) {
      tabBar.append(el("button", { type: "button", "data-tab": name.toLowerCase(), text: name, onclick: () => show(name) }));
    }
    function show(name) {
      if (current && current.close) current.close();
      panel.replaceChildren();
      for (const b of tabBar.children) b.classList.toggle("active", b.textContent === name);
      current = tabs[name](id, panel) || null;
    }
    state.cleanup.push(() => { if (current && current.close) current.close(); });
    main.append(title, info, actions, tabBar, panel);
    every(3000, load);
    show("Terminal");
  }

  /* The terminal: execd's PTY over its WebSocket. Reconnecting attaches
   * again from the last byte seen (?since=), so nothing printed is lost. */
  function terminalTab(id, panel) {
    const box = el("div", { id: "terminal" });
    const status = el("span", { class: "muted", id: "terminal-status", text: "connecting" });
    const reconnect = el("button", { type: "button", id: "terminal-reconnect", text: "Reconnect" });
    const copyBtn = el("button", { type: "button", id: "terminal-copy", text: "Copy", title: "Copy the selection (Ctrl+Shift+C)" });
    const pasteBtn = el("button", { type: "button", id: "terminal-paste", text: "Paste", title: "Paste the clipboard (Ctrl+Shift+V)" });
    panel.append(el("div", { class: "row" }, status, reconnect, copyBtn, pasteBtn,
      el("span", { class: "muted", text: "select with the mouse; Ctrl+Shift+C copies, Ctrl+Shift+V pastes" })), box);
    const term = new window.Terminal({ cursorBlink: true, convertEol: false, fontSize: 14, scrollback: 5000 });
    const fit = new window.FitAddon.FitAddon();
    term.loadAddon(fit);
    term.open(box);
    fit.fit();
    let ws = null, session = null, offset = 0, closed = false;
    const enc = new TextEncoder();
    function send(obj) { if (ws && ws.readyState === 1) ws.send(JSON.stringify(obj)); }
    term.onData((d) => { if (ws && ws.readyState === 1) { const b = enc.encode(d), f = new Uint8Array(b.length + 1); f.set(b, 1); ws.send(f); } });
    term.onResize(({ cols, rows }) => send({ type: "resize", cols, rows }));
    /* Ctrl+C stays the terminal's interrupt: copy and paste take Shift too,
     * as in desktop terminals. The clipboard API needs a secure context
     * (https or localhost); elsewhere the browser's own menu still works. */
    const copy = () => { const sel = term.getSelection(); if (sel && navigator.clipboard) navigator.clipboard.writeText(sel).catch((e) => flash("Copy: " + e.message)); };
    const paste = () => { if (navigator.clipboard) navigator.clipboard.readText().then((t) => { term.paste(t); term.focus(); }).catch((e) => flash("Paste: " + e.message)); };
    term.attachCustomKeyEventHandler((ev) => {
      if (ev.type !== "keydown" || !ev.ctrlKey || !ev.shiftKey) return true;
      if (ev.code === "KeyC") { copy(); return false; }
      if (ev.code === "KeyV") { paste(); return false; }
      return true;
    });
    copyBtn.addEventListener("click", copy);
    pasteBtn.addEventListener("click", paste);
    const onWinResize = () => fit.fit();
    window.addEventListener("resize", onWinResize);
    async function connect() {
      if (ws) { ws.onclose = null; ws.close(); }
      status.textContent = "connecting";
      try {
        const base = await execd(id);
        if (!session) {
          const r = await call(base + "/pty", { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
          session = r.session_id;
        }
        const url = new URL(base + "/pty/" + encodeURIComponent(session) + "/ws");
        url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
        url.searchParams.set("takeover", "1");
        if (offset) url.searchParams.set("since", String(offset));
        ws = new WebSocket(url);
        ws.binaryType = "arraybuffer";
        ws.onmessage = (m) => {
          if (typeof m.data === "string") {
            const j = JSON.parse(m.data);
            if (j.type === "connected") { status.textContent = "connected"; send({ type: "resize", cols: term.cols, rows: term.rows }); term.focus(); }
            else if (j.type === "exit") { status.textContent = "exited (" + j.exit_code + ")"; session = null; offset = 0; }
            else if (j.type === "error") status.textContent = "error: " + j.error;
            return;
          }
          const b = new Uint8Array(m.data);
          if (b[0] === 3) { /* replay: tag, u64 offset, bytes */
            const dv = new DataView(m.data);
            const at = Number(dv.getBigUint64(1));
            const skip = Math.max(0, offset - at);
            if (b.length - 9 > skip) term.write(b.subarray(9 + skip));
            offset = Math.max(offset, at + b.length - 9);
          } else if (b[0] === 1 || b[0] === 2) { term.write(b.subarray(1)); offset += b.length - 1; }
        };
        ws.onclose = (ev) => { if (!closed && status.textContent.indexOf("exited") < 0) status.textContent = "disconnected (" + ev.code + ")"; };
      } catch (e) { status.textContent = "failed: " + e.message; }
    }
    reconnect.addEventListener("click", connect);
    connect();
    return { close() { closed = true; window.removeEventListener("resize", onWinResize); if (ws) ws.close(); term.dispose(); } };
  }

  function filesTab(id, panel) {
    const dir = el("input", { id: "files-dir", value: "/tmp", size: 40 });
    const tbody = el("tbody", { id: "file-rows" });
    const viewer = el("pre", { class: "text", id: "file-view", hidden: true });
    const upload = el("input", { type: "file", id: "upload-input" });
    async function list() {
      viewer.hidden = true;
      try {
        const base = await execd(id);
        const r = await call(base + "/directories/list?depth=1&path=" + encodeURIComponent(dir.value));
        const items = (Array.isArray(r) ? r : []).filter((f) => f.path !== dir.value).sort((a, b) => a.path.localeCompare(b.path));
        const up = dir.value.replace(/\/[^/]+\/?$/, "") || "/";
        tbody.replaceChildren(el("tr", { class: "link", onclick: () => { dir.value = up; list(); } }, el("td", { text: ".." }), el("td"), el("td"), el("td")),
          ...items.map((f) => {
            const name = f.path.slice(f.path.lastIndexOf("/") + 1);
            const open = f.type === "directory" ? () => { dir.value = f.path; list(); } : () => view(f.path);
            return el("tr", { class: "link", "data-name": name },
              el("td", { class: "mono", onclick: open, text: name + (f.type === "directory" ? "/" : "") }),
              el("td", { text: f.type === "directory" ? "" : fmtBytes(f.size) }),
              el("td", { text: fmtTime(f.modified_at) }),
              el("td", {}, f.type === "file" ? el("a", { href: base + "/files/download?path=" + encodeURIComponent(f.path), download: name, text: "download" }) : ""));
          }));
      } catch (e) { flash("Files: " + e.message); }
    }
    async function view(path) {
      try {
        const base = await execd(id);
        const r = await fetch(base + "/files/download?path=" + encodeURIComponent(path), { headers: { Range: "bytes=0-262143" } });
        if (!r.ok && r.status !== 206) throw new Error("HTTP " + r.status);
        viewer.textContent = await r.text();
        viewer.hidden = false;
      } catch (e) { flash("View: " + e.message); }
    }
    upload.addEventListener("change", async () => {
      const f = upload.files[0];
      if (!f) return;
      const path = dir.value.replace(/\/$/, "") + "/" + f.name;
      const fd = new FormData();
      fd.append("metadata", new Blob([JSON.stringify({ path, mode: 644 })], { type: "application/json" }));
      fd.append("file", f, f.name);
      try {
        await call((await execd(id)) + "/files/upload", { method: "POST", body: fd });
        flash("Uploaded " + path, true);
        upload.value = "";
        list();
      } catch (e) { flash("Upload: " + e.message); }
    });
    dir.addEventListener("change", list);
    panel.append(el("div", { class: "row" }, dir, el("button", { type: "button", text: "List", onclick: list }), el("label", {}, "Upload: ", upload)),
      el("table", {}, el("thead", {}, el("tr", {}, ["Name", "Size", "Modified", ""].map((h) => el("th", { text: h })))), tbody), viewer);
    list();
  }

  /* CPU and memory from execd's /metrics, drawn as they come. */
  function resourcesTab(id, panel) {
    const cpu = el("canvas", { class: "graph", id: "graph-cpu", width: 480, height: 120 });
    const mem = el("canvas", { class: "graph", id: "graph-mem", width: 480, height: 120 });
    const label = el("div", { class: "muted", id: "resource-figures" });
    const points = [];
    panel.append(label, el("div", { class: "row" }, cpu, mem));
    function draw(c, key, max, name) {
      const g = c.getContext("2d");
      g.clearRect(0, 0, c.width, c.height);
      g.strokeStyle = "#2856c8";
      g.beginPath();
      points.forEach((p, i) => { const x = (i / 59) * c.width, y = c.height - (p[key] / (max || 1)) * (c.height - 14); i ? g.lineTo(x, y) : g.moveTo(x, y); });
      g.stroke();
      g.fillStyle = "#667085";
      g.fillText(name, 4, 11);
    }
    const timer = setInterval(tick, 2000);
    async function tick() {
      try {
        const m = await call((await execd(id)) + "/metrics");
        points.push(m);
        if (points.length > 60) points.shift();
        label.textContent = `CPU ${m.cpu_used_pct.toFixed(1)}% of ${m.cpu_count} · memory ${m.mem_used_mib.toFixed(1)} of ${m.mem_total_mib.toFixed(0)} MiB`;
        draw(cpu, "cpu_used_pct", 100 * m.cpu_count, "CPU %");
        draw(mem, "mem_used_mib", m.mem_total_mib, "memory MiB");
      } catch (e) { label.textContent = "no figures: " + e.message; }
    }
    tick();
    return { close() { clearInterval(timer); } };
  }

  function endpointsTab(id, panel) {
    const port = el("input", { id: "endpoint-port", type: "number", min: 1, max: 65535, value: 8080 });
    const out = el("pre", { class: "text", id: "endpoint-out" });
    async function get() {
      try { out.textContent = JSON.stringify(await api("GET", `/sandboxes/${encodeURIComponent(id)}/endpoints/${port.value}`), null, 2); }
      catch (e) { out.textContent = e.message; }
    }
    panel.append(el("div", { class: "row" }, "Port ", port, el("button", { type: "button", text: "Resolve", onclick: get })), out);
    get();
  }

  function diagTab(kind) {
    return (id, panel) => {
      const out = el("pre", { class: "text", id: "diag-" + kind, text: "loading" });
      panel.append(out);
      api("GET", `/sandboxes/${encodeURIComponent(id)}/diagnostics/${kind}`)
        .then((d) => { out.textContent = d.content !== undefined ? d.content : JSON.stringify(d, null, 2); })
        .catch((e) => { out.textContent = e.message; });
    };
  }

  function auditTab(id, panel) { auditTable(panel, id); }
  function auditTable(parent, sandboxId) {
    const tbody = el("tbody", { id: "audit-rows" });
    parent.append(el("table", {}, el("thead", {}, el("tr", {}, ["#", "Time", "Actor", "Action", "Sandbox", "Status", "Detail"].map((h) => el("th", { text: h })))), tbody));
    const q = new URLSearchParams({ limit: "200" });
    if (sandboxId) q.set("sandboxId", sandboxId);
    api("GET", "/audit?" + q).then((r) => {
      tbody.replaceChildren(...r.items.slice().reverse().map((a) => el("tr", {},
        el("td", { text: a.seq }), el("td", { text: fmtTime(a.time) }), el("td", { class: "mono", text: a.actor }),
        el("td", { class: "mono", text: a.action }), el("td", { class: "mono", text: a.sandboxId || "" }),
        el("td", { text: a.status }), el("td", { class: "mono", text: a.detail ? JSON.stringify(a.detail) : "" }))));
    }).catch((e) => tbody.replaceChildren(el("tr", {}, el("td", { colspan: 7, text: e.message }))));
  }

  /* ---- pools, images, audit ---- */
  function listPage(title, path, cols, row) {
    const tbody = el("tbody", { id: title.toLowerCase() + "-rows" });
    main.append(el("h1", { text: title }), el("table", {}, el("thead", {}, el("tr", {}, cols.map((h) => el("th", { text: h })))), tbody));
    every(5000, () => api("GET", path).then((r) => tbody.replaceChildren(...(r.items || r).map((x) => el("tr", {}, row(x).map((v) => el("td", { text: v ?? "" })))))).catch((e) => flash(title + ": " + e.message)));
  }
  function poolsPage() {
    listPage("Pools", "/pools", ["Name", "Available", "Starting", "Allocated", "Total", "Buffer", "Pool", "Image"], (p) => {
      const st = p.status || {}, cap = p.capacitySpec || {}, tpl = p.template || {};
      return [p.name, st.available, st.starting, st.allocated, st.total, `${cap.bufferMin}..${cap.bufferMax}`,
        `${cap.poolMin}..${cap.poolMax}`, tpl.image ? tpl.image.uri : ""];
    });
  }
  function imagesPage() {
    listPage("Images", "/images", ["Name", "Size", "Created", "Digest"], (i) => [i.name + (i.builtin ? " (built in)" : ""),
      i.size !== undefined ? fmtBytes(i.size) : "", fmtTime(i.createdAt), i.digest]);
  }
  function auditPage() {
    main.append(el("h1", { text: "Audit trail" }));
    auditTable(main, null);
  }

  /* ---- routing ---- */
  function route() {
    leavePage();
    const h = location.hash.replace(/^#/, "") || "/sandboxes";
    if (!state.key) { signIn(); return; }
    document.getElementById("top").hidden = false;
    const top = h.split("/")[1];
    for (const a of document.querySelectorAll("[data-nav]")) a.classList.toggle("active", a.dataset.nav === top || (top === "sandbox" && a.dataset.nav === "sandboxes"));
    if (top === "sandbox" && h.split("/")[2]) sandboxPage(decodeURIComponent(h.split("/")[2]));
    else if (top === "pools") poolsPage();
    else if (top === "images") imagesPage();
    else if (top === "audit") auditPage();
    else if (top === "signin") { location.hash = "#/sandboxes"; }
    else sandboxesPage();
  }
  document.getElementById("sign-out").addEventListener("click", () => signOut(""));
  window.addEventListener("hashchange", route);
  route();
})();
