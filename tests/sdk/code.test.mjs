// Code contexts. The JS SDK 0.1.11 has no code-interpreter client (and
// @alibaba-group/opensandbox-code-interpreter is not published on npm), so
// these tests drive execd's /code API through the sandbox endpoint the SDK
// resolves, with the SDK's own execd OpenAPI client (the "internal" entry
// point) and its ExecutionEventDispatcher for the SSE stream.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { API_KEY, RUN, cleanup, connect, create } from "./lib/env.mjs";
import { codeClient } from "./lib/code.mjs";

let sbx;
let code;

before(async () => {
  sbx = await create({ metadata: { "osb-sdk-run": RUN, suite: "code" } });
  code = await codeClient(sbx, API_KEY);
});
after(cleanup);

test("code: a python context keeps state between runs and returns the last expression", async () => {
  const ctx = await code.createContext("python");
  assert.equal(ctx.language, "python");
  assert.equal(typeof ctx.id, "string");
  const first = await code.run(ctx.id, "x = 21\nprint('x is', x)");
  assert.equal(first.error, undefined, JSON.stringify(first.error));
  assert.equal(first.logs.stdout.map((m) => m.text).join(""), "x is 21\n");
  assert.equal(first.id, ctx.id);
  const second = await code.run(ctx.id, "x * 2");
  assert.deepEqual(second.result.map((r) => r.text), ["42"]);
  assert.ok(second.complete);
  assert.ok(second.executionCount >= 2, `executionCount ${second.executionCount}`);
});

test("code: a python exception is reported as an error with ename/evalue/traceback", async () => {
  const ctx = await code.createContext("python");
  const exec = await code.run(ctx.id, "1 / 0");
  assert.equal(exec.error?.name, "ZeroDivisionError");
  assert.match(exec.error?.value ?? "", /division by zero/);
  assert.ok(exec.error.traceback.length > 0);
  assert.equal(exec.complete, undefined);
  const after = await code.run(ctx.id, "print('still alive')");
  assert.equal(after.logs.stdout.map((m) => m.text).join(""), "still alive\n");
});

test("code: a javascript context keeps state", async () => {
  const ctx = await code.createContext("javascript");
  await code.run(ctx.id, "let n = 40;");
  const exec = await code.run(ctx.id, "n + 2");
  assert.equal(exec.error, undefined, JSON.stringify(exec.error));
  assert.deepEqual(exec.result.map((r) => r.text), ["42"]);
});

test("code: contexts are listed, fetched and deleted", async () => {
  const ctx = await code.createContext("python");
  const list = await code.listContexts("python");
  assert.ok(Array.isArray(list));
  assert.ok(list.some((c) => c.id === ctx.id), JSON.stringify(list));
  const got = await code.getContext(ctx.id);
  assert.equal(got.id, ctx.id);
  assert.equal(got.language, "python");
  await code.deleteContext(ctx.id);
  const { response } = await code.raw.GET("/code/contexts/{context_id}", { params: { path: { context_id: ctx.id } } });
  assert.equal(response.status, 404);
});

test("code: the execd OpenAPI client reaches /code through the server proxy", async () => {
  const s = await connect(sbx.id, { useServerProxy: true });
  const viaProxy = await codeClient(s, API_KEY);
  const ctx = await viaProxy.createContext("python");
  const exec = await viaProxy.run(ctx.id, "import sys; sys.version_info[0]");
  assert.deepEqual(exec.result.map((r) => r.text), ["3"]);
});

test("code: a go context keeps declarations and variables and shows only new output", { timeout: 600000 }, async () => {
  const ctx = await code.createContext("go");
  assert.equal(ctx.language, "go");
  const stdout = (e) => e.logs.stdout.map((m) => m.text).join("");
  const first = await code.run(ctx.id, 'import "fmt"\nx := 21\nfmt.Println("first")');
  assert.equal(first.error, undefined, JSON.stringify(first.error));
  assert.equal(stdout(first), "first\n");
  const second = await code.run(ctx.id, "func double(n int) int { return n * 2 }\nfmt.Println(double(x))");
  assert.equal(second.error, undefined, JSON.stringify(second.error));
  assert.equal(stdout(second), "42\n");
  assert.ok(second.complete);
  const bad = await code.run(ctx.id, "fmt.Println(nope)");
  assert.equal(bad.error?.name, "CompileError");
  assert.match(bad.error?.value ?? "", /undefined: nope/);
  assert.equal(bad.complete, undefined);
  // upstream's code-interpreter example
  const prog = await code.run(ctx.id, 'package main\nimport "fmt"\nfunc main() {\n    fmt.Println("Hello from Go!")\n' +
    '    sum := 3 + 4\n    fmt.Println("3 + 4 =", sum)\n}');
  assert.equal(prog.error, undefined, JSON.stringify(prog.error));
  assert.equal(stdout(prog), "Hello from Go!\n3 + 4 = 7\n");
  await code.deleteContext(ctx.id);
});

test("code: a java context (jshell) keeps state and reports results, output and errors", async () => {
  const ctx = await code.createContext("java");
  assert.equal(ctx.language, "java");
  const first = await code.run(ctx.id, "int twice(int a) { return a * 2; }\nint n = 21;\nSystem.out.println(\"n is \" + n);");
  assert.equal(first.error, undefined, JSON.stringify(first.error));
  assert.equal(first.logs.stdout.map((m) => m.text).join(""), "n is 21\n");
  const second = await code.run(ctx.id, "twice(n)");
  assert.deepEqual(second.result.map((r) => r.text), ["42"]);
  assert.ok(second.complete);
  const bad = await code.run(ctx.id, "Integer.parseInt(\"x\")");
  assert.equal(bad.error?.name, "NumberFormatException");
  assert.match(bad.error?.value ?? "", /For input string/);
  assert.ok(bad.error.traceback.length > 0);
  assert.equal(bad.complete, undefined);
});

test("code: a typescript context keeps state across typed cells", async () => {
  const ctx = await code.createContext("typescript");
  assert.equal(ctx.language, "typescript");
  const first = await code.run(ctx.id, "interface P { v: number }\nenum E { A, B }\nconst p: P = { v: 40 };\nconsole.log('ts');");
  assert.equal(first.error, undefined, JSON.stringify(first.error));
  assert.equal(first.logs.stdout.map((m) => m.text).join(""), "ts\n");
  const second = await code.run(ctx.id, "p.v + E.B + 1");
  assert.deepEqual(second.result.map((r) => r.text), ["42"]);
  const bad = await code.run(ctx.id, "throw new RangeError('r')");
  assert.equal(bad.error?.name, "RangeError");
  assert.equal(bad.error?.value, "r");
});
