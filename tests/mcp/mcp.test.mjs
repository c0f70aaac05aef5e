// opensandbox-mcp driven by the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned in package.json) over stdio and over
// streamable HTTP, against a real opensandbox-server (started by
// tests/integration/test_mcp.py, which passes MCP_BIN, OPEN_SANDBOX_DOMAIN,
// OPEN_SANDBOX_API_KEY and MCP_HTTP_PORT).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const BIN = process.env.MCP_BIN;
const env = {
  ...process.env,
  OPEN_SANDBOX_DOMAIN: process.env.OPEN_SANDBOX_DOMAIN,
  OPEN_SANDBOX_API_KEY: process.env.OPEN_SANDBOX_API_KEY,
};

// Upstream's 19 tools with their parameters (required ones first), then ours.
const UPSTREAM = {
  sandbox_create: [["image"], ["auth_username", "auth_password", "timeout_seconds", "ready_timeout_seconds", "health_check_polling_interval_ms", "skip_health_check", "env", "metadata", "resource", "network_policy", "extensions", "entrypoint"]],
  sandbox_connect: [["sandbox_id"], ["connect_timeout_seconds", "health_check_polling_interval_ms", "skip_health_check"]],
  sandbox_kill: [["sandbox_id"], []],
  sandbox_get_info: [["sandbox_id"], []],
  sandbox_list: [[], ["filter"]],
  sandbox_renew: [["sandbox_id", "timeout_seconds"], []],
  sandbox_get_metrics: [["sandbox_id"], ["connect_if_missing"]],
  sandbox_healthcheck: [["sandbox_id"], ["connect_if_missing"]],
  sandbox_get_endpoint: [["sandbox_id", "port"], ["connect_if_missing"]],
  command_run: [["sandbox_id", "command"], ["background", "working_directory", "connect_if_missing"]],
  command_interrupt: [["sandbox_id", "execution_id"], ["connect_if_missing"]],
  file_read: [["sandbox_id", "path"], ["encoding", "range_header", "connect_if_missing"]],
  file_write: [["sandbox_id", "path", "content"], ["encoding", "mode", "owner", "group", "connect_if_missing"]],
  file_delete: [["sandbox_id", "paths"], ["connect_if_missing"]],
  file_search: [["sandbox_id", "path", "pattern"], ["connect_if_missing"]],
  file_create_directories: [["sandbox_id", "entries"], ["connect_if_missing"]],
  file_delete_directories: [["sandbox_id", "paths"], ["connect_if_missing"]],
  file_move: [["sandbox_id", "entries"], ["connect_if_missing"]],
  file_replace_contents: [["sandbox_id", "entries"], ["connect_if_missing"]],
};
const OURS = ["sandbox_pause", "sandbox_resume", "snapshot_create", "sandbox_create_from_snapshot",
  "code_run", "command_run_in_session", "egress_get", "egress_patch"];

async function connectStdio() {
  const client = new Client({ name: "osb-test", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command: BIN, args: [], env, stderr: "pipe" }));
  return client;
}

let httpServer;
async function connectHttp() {
  if (!httpServer) {
    httpServer = spawn(BIN, ["--transport", "http", "--listen", `127.0.0.1:${process.env.MCP_HTTP_PORT}`],
      { env, stdio: ["ignore", "ignore", "pipe"] });
    // Ready when it says it listens.
    await new Promise((resolve, reject) => {
      let err = "";
      httpServer.stderr.on("data", (d) => { err += d; if (err.includes("streamable HTTP on")) resolve(); });
      httpServer.on("exit", (code) => reject(new Error(`opensandbox-mcp exited ${code}: ${err}`)));
    });
  }
  const client = new Client({ name: "osb-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${process.env.MCP_HTTP_PORT}/mcp`)));
  return client;
}

function data(res) {
  assert.equal(res.isError, false, res.content?.[0]?.text);
  assert.ok(res.structuredContent, "structuredContent");
  assert.deepEqual(JSON.parse(res.content[0].text), res.structuredContent);
  return res.structuredContent;
}

function stdoutOf(exec) {
  return exec.logs.stdout.map((m) => m.text).join("\n");
}

async function scenario(name, connect) {
  const c = await connect();
  try {
    const { tools } = await c.listTools();
    const names = tools.map((t) => t.name);
    for (const [tool, [required, optional]] of Object.entries(UPSTREAM)) {
      const t = tools.find((x) => x.name === tool);
      assert.ok(t, `${name}: tool ${tool} listed`);
      assert.equal(t.inputSchema.type, "object");
      assert.deepEqual([...(t.inputSchema.required || [])].sort(), [...required].sort(), `${tool} required`);
      for (const p of [...required, ...optional])
        assert.ok(t.inputSchema.properties[p], `${tool} has parameter ${p}`);
      assert.ok(t.description.length > 10, `${tool} has a description`);
    }
    for (const tool of OURS) assert.ok(names.includes(tool), `${name}: tool ${tool} listed`);
    assert.equal(names.length, Object.keys(UPSTREAM).length + OURS.length);

    const created = data(await c.callTool({ name: "sandbox_create", arguments: { image: "host", timeout_seconds: 600 } }));
    const id = created.sandbox_id;
    assert.equal(created.info.status.state, "Running");

    const run = data(await c.callTool({ name: "command_run", arguments: { sandbox_id: id, command: "echo hello; echo oops >&2; exit 3" } }));
    assert.equal(stdoutOf(run), "hello");
    assert.equal(run.logs.stderr[0].text, "oops");
    assert.equal(run.exit_code, 3);

    data(await c.callTool({ name: "file_write", arguments: { sandbox_id: id, path: "/tmp/mcp/a.txt", content: "line1\nünïcode\n", mode: 644 } }));
    const read = data(await c.callTool({ name: "file_read", arguments: { sandbox_id: id, path: "/tmp/mcp/a.txt" } }));
    assert.equal(read.content, "line1\nünïcode\n");
    const part = data(await c.callTool({ name: "file_read", arguments: { sandbox_id: id, path: "/tmp/mcp/a.txt", range_header: "bytes=0-4" } }));
    assert.equal(part.content, "line1");
    const found = data(await c.callTool({ name: "file_search", arguments: { sandbox_id: id, path: "/tmp/mcp", pattern: "*.txt" } }));
    assert.equal(found.files.length, 1);
    const repl = data(await c.callTool({ name: "file_replace_contents", arguments: { sandbox_id: id, entries: [{ path: "/tmp/mcp/a.txt", old_content: "line1", new_content: "LINE" }] } }));
    assert.equal(repl.results[0].replaced_count, 1);
    data(await c.callTool({ name: "file_move", arguments: { sandbox_id: id, entries: [{ source: "/tmp/mcp/a.txt", destination: "/tmp/mcp/b.txt" }] } }));
    data(await c.callTool({ name: "file_create_directories", arguments: { sandbox_id: id, entries: [{ path: "/tmp/mcp/d/e", mode: 700 }] } }));
    const ls = data(await c.callTool({ name: "command_run", arguments: { sandbox_id: id, command: "cat /tmp/mcp/b.txt; stat -c %a /tmp/mcp/d/e" } }));
    assert.equal(stdoutOf(ls), "LINE\nünïcode\n700");

    const c1 = data(await c.callTool({ name: "code_run", arguments: { sandbox_id: id, language: "python", code: "x = 20 + 1" } }));
    const c2 = data(await c.callTool({ name: "code_run", arguments: { sandbox_id: id, language: "python", code: "print(x * 2)" } }));
    assert.equal(c1.context_id, c2.context_id, "one context per sandbox and language");
    assert.equal(stdoutOf(c2).trim(), "42");
    const exc = data(await c.callTool({ name: "code_run", arguments: { sandbox_id: id, language: "python", code: "1/0" } }));
    assert.equal(exc.error.name, "ZeroDivisionError");

    const s1 = data(await c.callTool({ name: "command_run_in_session", arguments: { sandbox_id: id, command: "cd /tmp/mcp && export V=kept" } }));
    const s2 = data(await c.callTool({ name: "command_run_in_session", arguments: { sandbox_id: id, session_id: s1.session_id, command: "echo $PWD $V" } }));
    assert.equal(stdoutOf(s2), "/tmp/mcp kept");

    // Long output: cut in the result, whole in the sandbox where the note says.
    const big = data(await c.callTool({ name: "command_run", arguments: { sandbox_id: id, command: "seq 1 60000" } }));
    assert.equal(big.truncated, true);
    const where = big.note.match(/(\/tmp\/opensandbox-mcp\/\S+\.log)/)[1];
    const tail = data(await c.callTool({ name: "command_run", arguments: { sandbox_id: id, command: `tail -n 1 ${where}; wc -l < ${where}` } }));
    assert.equal(stdoutOf(tail), "60000\n60000");

    data(await c.callTool({ name: "sandbox_pause", arguments: { sandbox_id: id } }));
    assert.equal(data(await c.callTool({ name: "sandbox_get_info", arguments: { sandbox_id: id } })).status.state, "Paused");
    data(await c.callTool({ name: "sandbox_resume", arguments: { sandbox_id: id } }));
    assert.equal(data(await c.callTool({ name: "sandbox_healthcheck", arguments: { sandbox_id: id } })).healthy, true);
    const ep = data(await c.callTool({ name: "sandbox_get_endpoint", arguments: { sandbox_id: id, port: 8000 } }));
    assert.match(ep.endpoint, /\/proxy\/8000$/);
    const m = data(await c.callTool({ name: "sandbox_get_metrics", arguments: { sandbox_id: id } }));
    assert.ok(m.cpu_count > 0);
    const list = data(await c.callTool({ name: "sandbox_list", arguments: { filter: { states: ["Running"] } } }));
    assert.ok(list.items.some((s) => s.id === id));

    // Bad input: a tool error the agent can read, and the session goes on.
    for (const [tool, args, want] of [
      ["command_run", { sandbox_id: id }, /"command" is required/],
      ["command_run", { sandbox_id: id, command: 7 }, /"command" must be of type/],
      ["sandbox_get_endpoint", { sandbox_id: id, port: "x" }, /"port" must be of type/],
      ["file_read", { sandbox_id: id, path: "/a", bogus: 1 }, /unknown argument "bogus"/],
      ["file_read", { sandbox_id: id, path: "/nope/missing" }, /file_read failed/],
      ["sandbox_get_info", { sandbox_id: "no-such-sandbox" }, /not found/i],
      ["code_run", { sandbox_id: id, language: "cobol", code: "x" }, /"language" is not one of/],
    ]) {
      const r = await c.callTool({ name: tool, arguments: args });
      assert.equal(r.isError, true, `${tool} ${JSON.stringify(args)}`);
      assert.match(r.content[0].text, want);
    }
    await assert.rejects(c.callTool({ name: "no_such_tool", arguments: {} }), /Unknown tool/);
    assert.equal(stdoutOf(data(await c.callTool({ name: "command_run", arguments: { sandbox_id: id, command: "echo still" } }))), "still");

    data(await c.callTool({ name: "sandbox_kill", arguments: { sandbox_id: id } }));
    const gone = await c.callTool({ name: "sandbox_get_info", arguments: { sandbox_id: id } });
    assert.equal(gone.isError, true);
  } finally {
    await c.close();
  }
}

test("stdio: tools, schemas, sandbox, command, files, code, session, pause/resume, bad input, kill",
  { timeout: 300000 }, () => scenario("stdio", connectStdio));

test("streamable HTTP: the same scenario", { timeout: 300000 }, () => scenario("http", connectHttp));

test("streamable HTTP: sessions, methods and origins", { timeout: 60000 }, async () => {
  const url = `http://127.0.0.1:${process.env.MCP_HTTP_PORT}/mcp`;
  const post = (body, headers = {}) => fetch(url, {
    method: "POST", body: JSON.stringify(body),
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
  });
  const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } };
  const r1 = await post(init);
  assert.equal(r1.status, 200);
  const sid = r1.headers.get("mcp-session-id");
  assert.match(sid, /^[0-9a-f]{32}$/);
  assert.equal((await r1.json()).result.protocolVersion, "2025-06-18");
  const list = { jsonrpc: "2.0", id: 2, method: "tools/list" };
  assert.equal((await post(list)).status, 400, "no session id");
  assert.equal((await post(list, { "mcp-session-id": "f".repeat(32) })).status, 404, "unknown session");
  assert.equal((await post(list, { "mcp-session-id": sid })).status, 200);
  assert.equal((await post({ jsonrpc: "2.0", method: "notifications/initialized" }, { "mcp-session-id": sid })).status, 202);
  assert.equal((await post(list, { "mcp-session-id": sid, origin: "http://evil.example" })).status, 403);
  assert.equal((await fetch(url, { headers: { "mcp-session-id": sid } })).status, 405);
  const bad = await fetch(url, { method: "POST", body: "{not json", headers: { "content-type": "application/json", "mcp-session-id": sid } });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.code, -32700);
  assert.equal((await fetch(url, { method: "DELETE", headers: { "mcp-session-id": sid } })).status, 200);
  assert.equal((await post(list, { "mcp-session-id": sid })).status, 404, "a deleted session is gone");
  httpServer?.kill();
});
