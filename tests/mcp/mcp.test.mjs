// opensandbox-mcp driven by the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned in package.json) over stdio and over
// streamable HTTP, against a real opensandbox-server started by
// tests/sdk/test_mcp.sh (which passes MCP_BIN, OPEN_SANDBOX_DOMAIN and
// OPEN_SANDBOX_API_KEY). Top-level tests run in order and share state (the
// sandbox of a transport's scenario); no test sleeps a fixed time.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import { request } from "node:http";
import { connect as tcpConnect } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const BIN = process.env.MCP_BIN;
assert.ok(BIN, "MCP_BIN is set (run tests/sdk/test_mcp.sh)");
const env = { ...process.env };
const INIT = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } };

// ---------------------------------------------------------------- schemas

// Every tool: required parameters, then each parameter's JSON Schema type
// ("a|b" for a list). Upstream's 19 first (names and parameters as its
// Python server), then ours.
const CIM = { connect_if_missing: "boolean" };
const CREATE = {
  timeout_seconds: "number", ready_timeout_seconds: "number", health_check_polling_interval_ms: "integer",
  skip_health_check: "boolean", env: "object|null", metadata: "object|null", resource: "object|null",
  network_policy: "object|null", extensions: "object|null", entrypoint: "array|null",
};
const UPSTREAM = {
  sandbox_create: [["image"], { image: "string", auth_username: "string|null", auth_password: "string|null", ...CREATE }],
  sandbox_connect: [["sandbox_id"], { sandbox_id: "string", connect_timeout_seconds: "number", health_check_polling_interval_ms: "integer", skip_health_check: "boolean" }],
  sandbox_kill: [["sandbox_id"], { sandbox_id: "string" }],
  sandbox_get_info: [["sandbox_id"], { sandbox_id: "string" }],
  sandbox_list: [[], { filter: "object|null" }],
  sandbox_renew: [["sandbox_id", "timeout_seconds"], { sandbox_id: "string", timeout_seconds: "number" }],
  sandbox_get_metrics: [["sandbox_id"], { sandbox_id: "string", ...CIM }],
  sandbox_healthcheck: [["sandbox_id"], { sandbox_id: "string", ...CIM }],
  sandbox_get_endpoint: [["sandbox_id", "port"], { sandbox_id: "string", port: "integer", ...CIM }],
  command_run: [["sandbox_id", "command"], { sandbox_id: "string", command: "string", background: "boolean", working_directory: "string|null", timeout_seconds: "number|null", ...CIM }],
  command_interrupt: [["sandbox_id", "execution_id"], { sandbox_id: "string", execution_id: "string", ...CIM }],
  file_read: [["sandbox_id", "path"], { sandbox_id: "string", path: "string", encoding: "string", range_header: "string|null", ...CIM }],
  file_write: [["sandbox_id", "path", "content"], { sandbox_id: "string", path: "string", content: "string", encoding: "string", mode: "integer", owner: "string|null", group: "string|null", ...CIM }],
  file_delete: [["sandbox_id", "paths"], { sandbox_id: "string", paths: "array", ...CIM }],
  file_search: [["sandbox_id", "path", "pattern"], { sandbox_id: "string", path: "string", pattern: "string", ...CIM }],
  file_create_directories: [["sandbox_id", "entries"], { sandbox_id: "string", entries: "array", ...CIM }],
  file_delete_directories: [["sandbox_id", "paths"], { sandbox_id: "string", paths: "array", ...CIM }],
  file_move: [["sandbox_id", "entries"], { sandbox_id: "string", entries: "array", ...CIM }],
  file_replace_contents: [["sandbox_id", "entries"], { sandbox_id: "string", entries: "array", ...CIM }],
};
const OURS = {
  sandbox_pause: [["sandbox_id"], { sandbox_id: "string" }],
  sandbox_resume: [["sandbox_id"], { sandbox_id: "string", ready_timeout_seconds: "number" }],
  snapshot_create: [["sandbox_id"], { sandbox_id: "string", name: "string|null", wait: "boolean", wait_timeout_seconds: "number" }],
  sandbox_create_from_snapshot: [["snapshot_id"], { snapshot_id: "string", ...CREATE }],
  code_run: [["sandbox_id", "code", "language"], { sandbox_id: "string", code: "string", language: "string", context_id: "string|null" }],
  command_run_in_session: [["sandbox_id", "command"], { sandbox_id: "string", command: "string", session_id: "string|null", working_directory: "string|null", timeout_seconds: "number|null" }],
  egress_get: [["sandbox_id"], { sandbox_id: "string" }],
  egress_patch: [["sandbox_id", "rules"], { sandbox_id: "string", rules: "array" }],
  desktop_screenshot: [["sandbox_id"], { sandbox_id: "string", x: "integer", y: "integer", width: "integer", height: "integer", scale: "number" }],
  desktop_click: [["sandbox_id", "x", "y"], { sandbox_id: "string", x: "integer", y: "integer", button: "string", double: "boolean" }],
  desktop_type: [["sandbox_id", "text"], { sandbox_id: "string", text: "string" }],
  desktop_key: [["sandbox_id", "keys"], { sandbox_id: "string", keys: "array" }],
  desktop_scroll: [["sandbox_id", "x", "y"], { sandbox_id: "string", x: "integer", y: "integer", dx: "integer", dy: "integer" }],
};
// Items of the array parameters: required fields and types.
const ITEMS = {
  "file_create_directories.entries": [["path"], { path: "string", mode: "integer", owner: "string|null", group: "string|null" }],
  "file_move.entries": [["source", "destination"], { source: "string", destination: "string" }],
  "file_replace_contents.entries": [["path", "old_content", "new_content"], { path: "string", old_content: "string", new_content: "string" }],
  "egress_patch.rules": [["action", "target"], { action: "string", target: "string" }],
};

const typeOf = (s) => [].concat(s.type).join("|");

function checkObject(where, schema, [required, props]) {
  assert.equal(schema.type, "object", `${where}: an object`);
  assert.deepEqual([...(schema.required || [])].sort(), [...required].sort(), `${where}: required`);
  assert.deepEqual(Object.keys(schema.properties).sort(), Object.keys(props).sort(), `${where}: parameters`);
  for (const [p, t] of Object.entries(props)) {
    assert.equal(typeOf(schema.properties[p]), t, `${where}.${p}: type`);
    if (!where.includes("."))
      assert.ok(schema.properties[p].description?.length > 5, `${where}.${p}: a description`);
  }
  assert.equal(schema.additionalProperties, false, `${where}: no unknown arguments`);
}

function checkTools(tools) {
  const all = { ...UPSTREAM, ...OURS };
  assert.deepEqual(tools.map((t) => t.name).sort(), Object.keys(all).sort());
  for (const t of tools) {
    checkObject(t.name, t.inputSchema, all[t.name]);
    assert.ok(t.description.length > 20, `${t.name}: a description`);
    assert.ok(t.title && t.annotations && typeof t.annotations.readOnlyHint === "boolean", `${t.name}: title, annotations`);
  }
  for (const [key, spec] of Object.entries(ITEMS)) {
    const [tool, param] = key.split(".");
    checkObject(key, tools.find((t) => t.name === tool).inputSchema.properties[param].items, spec);
  }
  const lang = tools.find((t) => t.name === "code_run").inputSchema.properties.language;
  assert.deepEqual(lang.enum, ["python", "javascript", "typescript", "bash", "java", "go"]);
}

// ---------------------------------------------------------------- helpers

function data(res) {
  assert.equal(res.isError, false, res.content?.[0]?.text);
  assert.ok(res.structuredContent, "structuredContent");
  assert.deepEqual(JSON.parse(res.content[0].text), res.structuredContent, "text and structuredContent agree");
  return res.structuredContent;
}

const stdoutOf = (exec) => exec.logs.stdout.map((m) => m.text).join("\n");
const call = async (c, name, args) => data(await c.callTool({ name, arguments: args }));
async function toolError(c, name, args, want) {
  const r = await c.callTool({ name, arguments: args });
  assert.equal(r.isError, true, `${name} ${JSON.stringify(args)} is a tool error: ${r.content?.[0]?.text}`);
  assert.match(r.content[0].text, want);
}

// A raw stdio peer: one JSON-RPC message per line each way.
class RawStdio {
  constructor() {
    this.p = spawn(BIN, [], { env, stdio: ["pipe", "pipe", "pipe"] });
    this.stderr = "";
    this.p.stderr.on("data", (d) => { this.stderr += d; });
    this.lines = [];
    this.waiters = [];
    createInterface({ input: this.p.stdout }).on("line", (l) => {
      const w = this.waiters.shift();
      if (w) w(l); else this.lines.push(l);
    });
  }
  write(msg) { this.p.stdin.write((typeof msg === "string" ? msg : JSON.stringify(msg)) + "\n"); }
  next() {
    const l = this.lines.shift();
    return l !== undefined ? Promise.resolve(JSON.parse(l)) : new Promise((r) => this.waiters.push((x) => r(JSON.parse(x))));
  }
  async send(msg) { this.write(msg); return this.next(); }
  async close() {
    this.p.stdin.end();
    const code = await new Promise((r) => this.p.on("exit", r));
    assert.equal(code, 0, "exits 0 at the end of stdin");
    assert.equal(this.lines.length, 0, `nothing unanswered: ${this.lines}`);
  }
}

// One HTTP server for the file (port 0: it prints the one it got).
let httpProc, httpUrl;
async function httpServer() {
  if (httpUrl) return httpUrl;
  httpProc = spawn(BIN, ["--transport", "http", "--listen", "127.0.0.1:0"], { env, stdio: ["ignore", "ignore", "pipe"] });
  httpUrl = await new Promise((resolve, reject) => {
    let err = "";
    httpProc.stderr.on("data", (d) => {
      err += d;
      const m = err.match(/streamable HTTP on (http:\/\/\S+\/mcp)/);
      if (m) resolve(m[1]);
    });
    httpProc.on("exit", (code) => reject(new Error(`opensandbox-mcp exited ${code}: ${err}`)));
  });
  return httpUrl;
}
after(() => httpProc?.kill());

const post = (url, body, headers = {}) => fetch(url, {
  method: "POST", body: typeof body === "string" ? body : JSON.stringify(body),
  headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
});

// A POST through node:http, which sends the Host header it is given (fetch does not).
function postWithHost(url, body, headers) {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", headers: { "content-type": "application/json", ...headers } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode));
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

// Writes raw bytes in the given pieces (each flushed before the next, no
// delay) and reads until `count` responses have arrived; their status codes.
async function rawHttp(url, pieces, count) {
  const { hostname, port } = new URL(url);
  const sock = tcpConnect({ host: hostname, port: Number(port), noDelay: true });
  await new Promise((r, j) => { sock.once("connect", r); sock.once("error", j); });
  let got = "";
  const done = new Promise((resolve, reject) => {
    sock.on("data", (d) => {
      got += d;
      const codes = [...got.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
      if (codes.length >= count) resolve(codes);
    });
    sock.on("error", reject);
    sock.on("close", () => reject(new Error(`closed after: ${got}`)));
  });
  for (const p of pieces) await new Promise((r) => sock.write(p, r));
  const codes = await done;
  sock.destroy();
  return codes;
}

// ---------------------------------------------------------------- the program

test("--version, --help and a bad option", () => {
  const v = spawnSync(BIN, ["--version"], { encoding: "utf8" });
  assert.equal(v.status, 0);
  assert.match(v.stdout, /^opensandbox-mcp \d+\.\d+/);
  const h = spawnSync(BIN, ["--help"], { encoding: "utf8" });
  assert.equal(h.status, 0);
  for (const o of ["--transport", "--listen", "--api-key", "--domain", "--protocol", "--request-timeout", "--use-server-proxy"])
    assert.ok(h.stdout.includes(o), `--help names ${o}`);
  const bad = spawnSync(BIN, ["--bogus"], { encoding: "utf8" });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /unknown option --bogus/);
  assert.equal(bad.stdout, "", "nothing on stdout");
});

test("stdio, raw JSON-RPC: lifecycle, version negotiation and precise errors", async () => {
  const s = new RawStdio();
  const early = await s.send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
  assert.equal(early.error.code, -32600, "tools/list before initialize");
  assert.deepEqual(await s.send({ jsonrpc: "2.0", id: 2, method: "ping" }), { jsonrpc: "2.0", id: 2, result: {} });
  assert.equal((await s.send({ jsonrpc: "2.0", id: 3, method: "initialize", params: {} })).error.code, -32602, "initialize without protocolVersion");
  for (const [asked, got] of [["2024-11-05", "2024-11-05"], ["2025-03-26", "2025-03-26"], ["1999-01-01", "2025-06-18"], ["2025-06-18", "2025-06-18"]]) {
    const r = await s.send({ jsonrpc: "2.0", id: `init-${asked}`, method: "initialize", params: { ...INIT, protocolVersion: asked } });
    assert.equal(r.result.protocolVersion, got, `asked ${asked}`);
    assert.equal(r.result.serverInfo.name, "opensandbox-mcp");
    assert.deepEqual(r.result.capabilities, { tools: { listChanged: false } });
  }
  s.write({ jsonrpc: "2.0", method: "notifications/initialized" }); // no answer: the next line is the ping's
  s.write({ jsonrpc: "2.0", method: "no/such/notification" });
  assert.equal((await s.send({ jsonrpc: "2.0", id: "p", method: "ping" })).id, "p");
  const err = async (msg, code, id = null) => {
    const r = await s.send(msg);
    assert.equal(r.jsonrpc, "2.0");
    assert.equal(r.error?.code, code, JSON.stringify(msg));
    assert.deepEqual(r.id, id);
    assert.ok(r.error.message.length > 5);
  };
  await err("{not json", -32700);
  await err("[1,", -32700);
  await err("42", -32600);
  await err({ id: 5, method: "ping" }, -32600, 5);
  await err({ jsonrpc: "1.0", id: 5, method: "ping" }, -32600, 5);
  await err({ jsonrpc: "2.0", id: null, method: "ping" }, -32600);
  await err({ jsonrpc: "2.0", id: 1.5, method: "ping" }, -32600);
  await err({ jsonrpc: "2.0", id: 6, method: 7 }, -32600, 6);
  await err({ jsonrpc: "2.0", id: 7 }, -32600, 7);
  await err({ jsonrpc: "2.0", id: 8, method: "resources/read" }, -32601, 8);
  await err({ jsonrpc: "2.0", id: 9, method: "tools/call", params: [1] }, -32602, 9);
  await err({ jsonrpc: "2.0", id: 10, method: "tools/call", params: { arguments: {} } }, -32602, 10);
  await err({ jsonrpc: "2.0", id: 11, method: "tools/call", params: { name: "no_such_tool" } }, -32602, 11);
  await err({ jsonrpc: "2.0", id: 12, method: "tools/call", params: { name: "sandbox_kill", arguments: [1] } }, -32602, 12);
  // 2025-06-18 has no batches; an empty batch is invalid anyway.
  await err([{ jsonrpc: "2.0", id: 13, method: "ping" }], -32600);
  await err([], -32600);
  // A bad argument is a tool result with isError, not a JSON-RPC error.
  const bad = await s.send({ jsonrpc: "2.0", id: 14, method: "tools/call", params: { name: "sandbox_kill", arguments: {} } });
  assert.equal(bad.result.isError, true);
  assert.match(bad.result.content[0].text, /"sandbox_id" is required/);
  const list = await s.send({ jsonrpc: "2.0", id: 15, method: "tools/list" });
  assert.equal(list.result.tools.length, 32);
  // In 2025-03-26 batches work: answers in one array, none for the notification.
  await s.send({ jsonrpc: "2.0", id: 16, method: "initialize", params: { ...INIT, protocolVersion: "2025-03-26" } });
  const batch = await s.send([{ jsonrpc: "2.0", id: "a", method: "ping" }, { jsonrpc: "2.0", method: "notifications/initialized" },
    { jsonrpc: "2.0", id: "b", method: "nope" }, 7, { jsonrpc: "2.0", id: "c", method: "initialize", params: INIT }]);
  assert.deepEqual(batch.map((r) => [r.id, r.error?.code ?? "ok"]), [["a", "ok"], ["b", -32601], [null, -32600], ["c", -32600]]);
  s.write([{ jsonrpc: "2.0", method: "notifications/initialized" }]); // a batch of notifications: no answer
  assert.equal((await s.send({ jsonrpc: "2.0", id: 17, method: "ping" })).id, 17);
  await s.close();
  assert.equal(s.stderr.includes("{\"jsonrpc\""), false, "no protocol on stderr");
});

// ---------------------------------------------------------------- the scenario, per transport

function scenario(name, connect) {
  const st = {};
  const t = (title, fn) => test(`${name}: ${title}`, { timeout: 120000 }, async () => {
    if (!st.c && title !== "initialize, every tool and its schema") throw new Error("no client (an earlier test failed)");
    await fn(st.c);
  });

  t("initialize, every tool and its schema", async () => {
    st.c = await connect();
    assert.equal(st.c.getServerVersion().name, "opensandbox-mcp");
    assert.ok(st.c.getServerCapabilities().tools);
    assert.match(st.c.getInstructions(), /sandbox_id/);
    const { tools } = await st.c.listTools();
    checkTools(tools);
    await st.c.ping();
  });

  t("sandbox_create answers upstream's {sandbox_id, info}", async (c) => {
    const r = await call(c, "sandbox_create", { image: "host", timeout_seconds: 600, env: { GREETING: "hi" }, metadata: { suite: "mcp" }, resource: null });
    st.id = r.sandbox_id;
    assert.equal(r.info.id, st.id);
    assert.equal(r.info.status.state, "Running");
    assert.equal(r.info.image.image, "host");
    assert.deepEqual(r.info.metadata, { suite: "mcp" });
    assert.ok(r.info.created_at && r.info.expires_at, "snake_case times");
    assert.deepEqual(Object.keys(r.info.status).sort(), ["last_transition_at", "message", "reason", "state"]);
    const info = await call(c, "sandbox_get_info", { sandbox_id: st.id });
    assert.equal(info.id, st.id);
    const again = await call(c, "sandbox_connect", { sandbox_id: st.id });
    assert.equal(again.sandbox_id, st.id);
  });

  t("command_run: output, exit code, working directory, env, background and interrupt", async (c) => {
    const run = await call(c, "command_run", { sandbox_id: st.id, command: "echo hello; echo $GREETING; echo oops >&2; exit 3" });
    assert.equal(stdoutOf(run), "hello\nhi");
    assert.equal(run.logs.stderr[0].text, "oops");
    assert.equal(run.logs.stderr[0].is_error, true);
    assert.equal(typeof run.logs.stdout[0].timestamp, "number");
    assert.equal(run.exit_code, 3);
    assert.equal(run.error.name, "CommandExecError");
    assert.equal(run.error.value, "3");
    assert.ok(Array.isArray(run.error.traceback));
    const ok = await call(c, "command_run", { sandbox_id: st.id, command: "pwd", working_directory: "/tmp", connect_if_missing: true });
    assert.equal(stdoutOf(ok), "/tmp");
    assert.equal(ok.exit_code, 0);
    assert.equal(ok.error, null);
    const bg = await call(c, "command_run", { sandbox_id: st.id, command: "sleep 600", background: true });
    assert.match(bg.id, /\S/);
    assert.deepEqual(await call(c, "command_interrupt", { sandbox_id: st.id, execution_id: bg.id }), { status: "interrupted" });
    const timed = await c.callTool({ name: "command_run", arguments: { sandbox_id: st.id, command: "sleep 600", timeout_seconds: 1 } });
    assert.ok(timed.isError || timed.structuredContent.exit_code !== 0, "a timeout stops the command");
  });

  t("files: write, read, ranges, search, replace, move, directories, delete", async (c) => {
    assert.deepEqual(await call(c, "file_write", { sandbox_id: st.id, path: "/tmp/mcp/a.txt", content: "line1\nünïcode\n", mode: 644 }), { status: "written" });
    assert.equal((await call(c, "file_read", { sandbox_id: st.id, path: "/tmp/mcp/a.txt" })).content, "line1\nünïcode\n");
    assert.equal((await call(c, "file_read", { sandbox_id: st.id, path: "/tmp/mcp/a.txt", range_header: "bytes=0-4" })).content, "line1");
    assert.equal((await call(c, "file_read", { sandbox_id: st.id, path: "/tmp/mcp/a.txt", range_header: "bytes=6-" })).content, "ünïcode\n");
    assert.equal((await call(c, "file_read", { sandbox_id: st.id, path: "/tmp/mcp/a.txt", range_header: "bytes=-8" })).content, "nïcode\n");
    await call(c, "file_write", { sandbox_id: st.id, path: "/tmp/mcp/l1.txt", content: "caf\u00e9", encoding: "latin-1" });
    const lat = await call(c, "command_run", { sandbox_id: st.id, command: "od -An -tx1 /tmp/mcp/l1.txt | tr -d ' \\n'" });
    assert.equal(stdoutOf(lat), "636166e9");
    assert.equal((await call(c, "file_read", { sandbox_id: st.id, path: "/tmp/mcp/l1.txt", encoding: "latin-1" })).content, "caf\u00e9");
    await call(c, "file_write", { sandbox_id: st.id, path: "/tmp/mcp/empty", content: "" });
    assert.equal((await call(c, "file_read", { sandbox_id: st.id, path: "/tmp/mcp/empty" })).content, "");

    const found = await call(c, "file_search", { sandbox_id: st.id, path: "/tmp/mcp", pattern: "*.txt" });
    assert.deepEqual(found.result.map((e) => e.path).sort(), ["/tmp/mcp/a.txt", "/tmp/mcp/l1.txt"]);
    for (const k of ["path", "mode", "owner", "group", "size", "modified_at", "created_at"]) assert.ok(k in found.result[0], `EntryInfo has ${k}`);
    assert.equal(found.result.find((e) => e.path === "/tmp/mcp/a.txt").mode, 644);

    const repl = await call(c, "file_replace_contents", { sandbox_id: st.id, entries: [{ path: "/tmp/mcp/a.txt", old_content: "line1", new_content: "LINE" }] });
    assert.deepEqual(repl.result, [{ path: "/tmp/mcp/a.txt", replaced_count: 1 }]);
    assert.deepEqual(await call(c, "file_move", { sandbox_id: st.id, entries: [{ source: "/tmp/mcp/a.txt", destination: "/tmp/mcp/b.txt" }] }), { status: "moved" });
    assert.deepEqual(await call(c, "file_create_directories", { sandbox_id: st.id, entries: [{ path: "/tmp/mcp/d/e", mode: 700 }, { path: "/tmp/mcp/f" }] }), { status: "created" });
    const ls = await call(c, "command_run", { sandbox_id: st.id, command: "cat /tmp/mcp/b.txt; stat -c %a /tmp/mcp/d/e /tmp/mcp/f; test -e /tmp/mcp/a.txt || echo moved" });
    assert.equal(stdoutOf(ls), "LINE\nünïcode\n700\n755\nmoved");
    assert.deepEqual(await call(c, "file_delete", { sandbox_id: st.id, paths: ["/tmp/mcp/b.txt", "/tmp/mcp/none"] }), { status: "deleted" });
    assert.deepEqual(await call(c, "file_delete_directories", { sandbox_id: st.id, paths: ["/tmp/mcp/d"] }), { status: "deleted" });
    const gone = await call(c, "command_run", { sandbox_id: st.id, command: "ls /tmp/mcp" });
    assert.equal(stdoutOf(gone), "empty\nf\nl1.txt");
  });

  t("file_read cuts a long file at a character boundary and its note's range reads on", async (c) => {
    // "a" then 70000 two-byte characters: the 100 KB cut falls inside one.
    await call(c, "command_run", { sandbox_id: st.id, command: "{ printf a; for i in $(seq 70000); do printf '\\303\\251'; done; } > /tmp/big.txt" });
    let text = "", range, reads = 0;
    for (;;) {
      const r = await call(c, "file_read", { sandbox_id: st.id, path: "/tmp/big.txt", ...(range ? { range_header: range } : {}) });
      reads++;
      assert.ok(!r.content.includes("\ufffd"), "no character split");
      text += r.content;
      if (!r.truncated) break;
      range = r.note.match(/range_header "(bytes=\d+-\d+)"/)[1];
    }
    assert.equal(reads, 2);
    assert.equal(text, "a" + "é".repeat(70000));
  });

  t("code_run keeps one context per sandbox and language", async (c) => {
    const c1 = await call(c, "code_run", { sandbox_id: st.id, language: "python", code: "x = 20 + 1" });
    const c2 = await call(c, "code_run", { sandbox_id: st.id, language: "python", code: "print(x * 2)\nx + 1" });
    assert.equal(c1.context_id, c2.context_id, "one context per sandbox and language");
    assert.equal(stdoutOf(c2).trim(), "42");
    assert.equal(c2.result[0].text, "22");
    assert.equal(typeof c2.result[0].timestamp, "number");
    const exc = await call(c, "code_run", { sandbox_id: st.id, language: "python", code: "1/0" });
    assert.equal(exc.error.name, "ZeroDivisionError");
    assert.ok(exc.error.traceback.some((l) => l.includes("ZeroDivisionError")));
    const b = await call(c, "code_run", { sandbox_id: st.id, language: "bash", code: "export K=v; echo $((6*7))" });
    assert.notEqual(b.context_id, c1.context_id, "another language, another context");
    assert.equal(stdoutOf(b).trim(), "42");
    assert.equal(stdoutOf(await call(c, "code_run", { sandbox_id: st.id, language: "bash", code: "echo $K" })).trim(), "v");
  });

  t("command_run_in_session keeps the directory and variables", async (c) => {
    const s1 = await call(c, "command_run_in_session", { sandbox_id: st.id, command: "cd /tmp/mcp && export V=kept", working_directory: "/" });
    assert.match(s1.session_id, /\S/);
    const s2 = await call(c, "command_run_in_session", { sandbox_id: st.id, session_id: s1.session_id, command: "echo $PWD $V" });
    assert.equal(stdoutOf(s2), "/tmp/mcp kept");
    assert.equal(s2.session_id, s1.session_id);
  });

  t("long output is cut with a note; the whole of it is in the sandbox where the note says", async (c) => {
    const big = await call(c, "command_run", { sandbox_id: st.id, command: "seq 1 60000; echo err >&2" });
    assert.equal(big.truncated, true);
    assert.ok(JSON.stringify(big).length < 400 * 1024, "the result stays small");
    assert.equal(big.logs.stdout[0].text, "1");
    const where = big.note.match(/(\/tmp\/opensandbox-mcp\/\S+\.log)/)[1];
    const tail = await call(c, "command_run", { sandbox_id: st.id, command: `tail -n 2 ${where}; wc -l < ${where}` });
    assert.equal(stdoutOf(tail), "60000\nerr\n60001");
    const part = await call(c, "file_read", { sandbox_id: st.id, path: where, range_header: "bytes=0-9" });
    assert.equal(part.content, "1\n2\n3\n4\n5\n");
  });

  t("pause, resume, healthcheck, endpoint, metrics, renew, list", async (c) => {
    assert.deepEqual(await call(c, "sandbox_pause", { sandbox_id: st.id }), { status: "paused" });
    assert.equal((await call(c, "sandbox_get_info", { sandbox_id: st.id })).status.state, "Paused");
    assert.equal((await call(c, "sandbox_healthcheck", { sandbox_id: st.id })).healthy, false);
    assert.deepEqual(await call(c, "sandbox_resume", { sandbox_id: st.id }), { status: "resumed" });
    assert.deepEqual(await call(c, "sandbox_healthcheck", { sandbox_id: st.id }), { sandbox_id: st.id, healthy: true });
    assert.equal(stdoutOf(await call(c, "code_run", { sandbox_id: st.id, language: "python", code: "print(x)" })), "21\n", "the context outlived the pause");
    const ep = await call(c, "sandbox_get_endpoint", { sandbox_id: st.id, port: 8000 });
    assert.match(ep.endpoint, /\/proxy\/8000$/);
    assert.equal(typeof ep.headers, "object");
    const m = await call(c, "sandbox_get_metrics", { sandbox_id: st.id });
    assert.deepEqual(Object.keys(m).sort(), ["cpu_count", "cpu_used_percentage", "memory_total_in_mib", "memory_used_in_mib", "timestamp"]);
    assert.ok(m.cpu_count > 0 && m.memory_total_in_mib > 0);
    const before = Date.now();
    const renew = await call(c, "sandbox_renew", { sandbox_id: st.id, timeout_seconds: 1800 });
    const exp = Date.parse(renew.expires_at);
    assert.ok(exp > before + 1700e3 && exp < Date.now() + 1900e3, `expires_at ${renew.expires_at}`);
    const list = await call(c, "sandbox_list", { filter: { states: ["Running"], metadata: { suite: "mcp" } } });
    assert.ok(list.sandbox_infos.some((s) => s.id === st.id));
    assert.ok(list.sandbox_infos.every((s) => s.metadata.suite === "mcp"));
    assert.equal(typeof list.pagination.total_items, "number");
    assert.equal(typeof list.pagination.has_next_page, "boolean");
    assert.ok((await call(c, "sandbox_list", {})).sandbox_infos.length >= 1);
  });

  t("bad input is a tool error naming the problem, never a protocol crash", async (c) => {
    for (const [tool, args, want] of [
      ["command_run", { sandbox_id: st.id }, /"command" is required/],
      ["command_run", { sandbox_id: st.id, command: 7 }, /"command" must be of type "string", not an integer/],
      ["command_run", { sandbox_id: st.id, command: "" }, /"command" must not be empty/],
      ["sandbox_get_endpoint", { sandbox_id: st.id, port: "x" }, /"port" must be of type "integer"/],
      ["sandbox_get_endpoint", { sandbox_id: st.id, port: 70000 }, /"port" must be at most 65535/],
      ["sandbox_get_endpoint", { sandbox_id: st.id, port: 80.5 }, /"port" must be of type "integer"/],
      ["file_read", { sandbox_id: st.id, path: "/a", bogus: 1 }, /unknown argument "bogus"/],
      ["file_read", { sandbox_id: st.id, path: "/a", range_header: "lines=1-2" }, /range_header/],
      ["file_read", { sandbox_id: st.id, path: "/a", encoding: "klingon" }, /encoding "klingon"/],
      ["file_read", { sandbox_id: st.id, path: "/nope/missing" }, /file_read failed/],
      ["file_write", { sandbox_id: st.id, path: "/tmp/m", content: "x", mode: 999 }, /mode 999/],
      ["file_write", { sandbox_id: st.id, path: "/tmp/m", content: "\u4e2d", encoding: "latin-1" }, /latin-1/],
      ["file_move", { sandbox_id: st.id, entries: [{ source: "/a" }] }, /"entries\[0\]\.destination" is required/],
      ["file_delete", { sandbox_id: st.id, paths: [] }, /"paths" needs at least 1 item/],
      ["sandbox_create", { image: "host", auth_username: "u" }, /provided together/],
      ["sandbox_create", { image: "host", network_policy: { defaultAction: "maybe" } }, /"network_policy\.defaultAction" must be one of/],
      ["sandbox_list", { filter: { page_size: 0 } }, /"filter\.page_size" must be at least 1/],
      ["sandbox_get_info", { sandbox_id: "no-such-sandbox" }, /not found/i],
      ["sandbox_kill", { sandbox_id: "no-such-sandbox" }, /not found/i],
      ["code_run", { sandbox_id: st.id, language: "cobol", code: "x" }, /"language" must be one of/],
      ["egress_get", { sandbox_id: st.id }, /NOT_ENABLED|no egress policy/i],
    ]) await toolError(c, tool, args, want);
    await assert.rejects(c.callTool({ name: "no_such_tool", arguments: {} }), /Unknown tool/);
    assert.equal(stdoutOf(await call(c, "command_run", { sandbox_id: st.id, command: "echo still" })), "still", "the session goes on");
  });

  t("sandbox_kill", async (c) => {
    assert.deepEqual(await call(c, "sandbox_kill", { sandbox_id: st.id }), { status: "killed" });
    await toolError(c, "sandbox_get_info", { sandbox_id: st.id }, /not found/i);
    await toolError(c, "command_run", { sandbox_id: st.id, command: "true" }, /command_run failed/);
    await st.c.close();
  });
}

scenario("stdio", async () => {
  const client = new Client({ name: "osb-test", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command: BIN, args: [], env, stderr: "pipe" }));
  return client;
});

scenario("streamable HTTP", async () => {
  const client = new Client({ name: "osb-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(await httpServer())));
  return client;
});

// ---------------------------------------------------------------- ours only, over stdio

test("stdio: egress policy, snapshots and a sandbox made from one", { timeout: 180000 }, async () => {
  const client = new Client({ name: "osb-test", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command: BIN, args: [], env, stderr: "pipe" }));
  const ids = [];
  try {
    const a = await call(client, "sandbox_create", { image: "host", network_policy: { egress: [{ action: "allow", target: "example.com" }] } });
    ids.push(a.sandbox_id);
    const pol = await call(client, "egress_get", { sandbox_id: a.sandbox_id });
    assert.equal(pol.policy.defaultAction, "deny", "defaultAction defaults to deny, as upstream's model");
    assert.deepEqual(pol.policy.egress, [{ action: "allow", target: "example.com" }]);
    const patched = await call(client, "egress_patch", { sandbox_id: a.sandbox_id, rules: [{ action: "allow", target: "pypi.org" }, { action: "deny", target: "example.com" }] });
    const rules = Object.fromEntries(patched.policy.egress.map((r) => [r.target, r.action]));
    assert.deepEqual(rules, { "pypi.org": "allow", "example.com": "deny" });

    await call(client, "file_write", { sandbox_id: a.sandbox_id, path: "/srv/mcp/kept.txt", content: "from the snapshot" });
    const snap = await call(client, "snapshot_create", { sandbox_id: a.sandbox_id, name: "mcp-snap" });
    assert.equal(snap.status.state, "Ready");
    assert.equal(snap.sandbox_id, a.sandbox_id);
    assert.equal(snap.name, "mcp-snap");
    const b = await call(client, "sandbox_create_from_snapshot", { snapshot_id: snap.id });
    ids.push(b.sandbox_id);
    assert.equal(b.info.snapshot_id ?? snap.id, snap.id);
    assert.equal((await call(client, "file_read", { sandbox_id: b.sandbox_id, path: "/srv/mcp/kept.txt" })).content, "from the snapshot");
  } finally {
    for (const id of ids) await client.callTool({ name: "sandbox_kill", arguments: { sandbox_id: id } });
    await client.close();
  }
});

// ---------------------------------------------------------------- the HTTP transport itself

test("streamable HTTP: sessions, methods, origins, hosts and errors", async () => {
  const url = await httpServer();
  const r1 = await post(url, { jsonrpc: "2.0", id: 1, method: "initialize", params: INIT });
  assert.equal(r1.status, 200);
  assert.match(r1.headers.get("content-type"), /^application\/json/);
  const sid = r1.headers.get("mcp-session-id");
  assert.match(sid, /^[0-9a-f]{32}$/);
  assert.equal((await r1.json()).result.protocolVersion, "2025-06-18");
  const h = { "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" };
  const list = { jsonrpc: "2.0", id: 2, method: "tools/list" };
  assert.equal((await post(url, list)).status, 400, "no session id");
  assert.equal((await post(url, list, { "mcp-session-id": "f".repeat(32) })).status, 404, "unknown session");
  const ok = await post(url, list, h);
  assert.equal(ok.status, 200);
  assert.equal((await ok.json()).result.tools.length, 32);
  assert.equal((await post(url, { jsonrpc: "2.0", method: "notifications/initialized" }, h)).status, 202);
  assert.equal((await post(url, list, { ...h, origin: "http://evil.example" })).status, 403, "a foreign Origin");
  assert.equal((await post(url, list, { ...h, origin: "http://localhost.evil.example:80" })).status, 403);
  assert.equal((await post(url, list, { ...h, origin: "http://localhost:3000" })).status, 200, "a local Origin");
  assert.equal(await postWithHost(url, list, { ...h, host: "evil.example:80" }), 403, "a foreign Host (DNS rebinding)");
  assert.equal(await postWithHost(url, list, { ...h, host: "localhost:1" }), 200, "a local Host");
  assert.equal((await post(url, list, { ...h, "mcp-protocol-version": "1999-01-01" })).status, 400);
  assert.equal((await post(url.replace(/\/mcp$/, "/other"), list, h)).status, 404);
  assert.equal((await fetch(url, { headers: h })).status, 405, "GET: no server stream");
  const plain = await fetch(url, { method: "POST", body: JSON.stringify(list), headers: { ...h, "content-type": "text/plain" } });
  assert.equal(plain.status, 415);
  const bad = await post(url, "{not json", h);
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.code, -32700);
  const batch = await post(url, [list], h);
  assert.equal((await batch.json()).error.code, -32600, "no batches in 2025-06-18");
  const unknown = await post(url, { jsonrpc: "2.0", id: 3, method: "nope" }, h);
  assert.equal((await unknown.json()).error.code, -32601);
  const tool = await (await post(url, { jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "sandbox_kill", arguments: {} } }, h)).json();
  assert.equal(tool.result.isError, true);

  // A 2025-03-26 session (its own id) may batch.
  const r2 = await post(url, { jsonrpc: "2.0", id: 1, method: "initialize", params: { ...INIT, protocolVersion: "2025-03-26" } });
  const sid2 = r2.headers.get("mcp-session-id");
  assert.notEqual(sid2, sid);
  const b2 = await (await post(url, [{ jsonrpc: "2.0", id: "x", method: "ping" }, { jsonrpc: "2.0", id: "y", method: "tools/list" }], { "mcp-session-id": sid2 })).json();
  assert.deepEqual(b2.map((r) => r.id), ["x", "y"]);
  assert.equal((await post(url, [list], h).then((r) => r.json())).error.code, -32600, "the first session is still 2025-06-18");
  // A failed initialize gets no session.
  const r3 = await post(url, { jsonrpc: "2.0", id: 1, method: "initialize", params: {} });
  assert.equal(r3.headers.get("mcp-session-id"), null);
  assert.equal((await r3.json()).error.code, -32602);

  // Pipelined requests on one connection, and a request whose headers come
  // in one-byte pieces (a foreign Origin split across reads is still seen).
  const body = JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" });
  const req = (extra) => `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
    `Mcp-Session-Id: ${sid}\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  assert.deepEqual(await rawHttp(url, [req("") + req("") + req("")], 3), [200, 200, 200]);
  assert.deepEqual(await rawHttp(url, [...req("Origin: http://evil.example\r\n")], 1), [403]);
  assert.deepEqual(await rawHttp(url, [...req("")], 1), [200]);

  assert.equal((await fetch(url, { method: "DELETE", headers: h })).status, 200);
  assert.equal((await post(url, list, h)).status, 404, "a deleted session is gone");
  assert.equal((await fetch(url, { method: "DELETE", headers: h })).status, 404);
});
