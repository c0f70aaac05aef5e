// Commands and sessions through the official SDK (execd reached through the
// endpoint the server hands out): stdout/stderr, exit codes, streaming
// handlers, cwd/env/timeout/uid, background commands with status and logs,
// interrupt, bash sessions.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { RUN, cleanup, create, err, out, sleep, waitFor } from "./lib/env.mjs";

let sbx;

before(async () => {
  sbx = await create({ metadata: { "osb-sdk-run": RUN, suite: "commands" } });
});
after(cleanup);

test("commands: stdout and stderr lines, exit code 0", async () => {
  const exec = await sbx.commands.run("echo hello; echo oops >&2; printf 'a\\nb\\n'");
  assert.equal(exec.exitCode, 0);
  assert.deepEqual(out(exec), ["hello", "a", "b"]);
  assert.deepEqual(err(exec), ["oops"]);
  assert.ok(exec.id && /^[0-9a-f]{32}$/.test(exec.id), `command id ${exec.id}`);
  assert.ok(exec.complete, "execution_complete was received");
  assert.equal(exec.error, undefined);
});

test("commands: non-zero exit codes become exitCode and a CommandExecError", async () => {
  const exec = await sbx.commands.run("echo partial; exit 3");
  assert.equal(exec.exitCode, 3);
  assert.deepEqual(out(exec), ["partial"]);
  assert.equal(exec.error?.name, "CommandExecError");
  assert.equal(exec.error?.value, "3");
  assert.equal(exec.complete, undefined);
  const notFound = await sbx.commands.run("/no/such/binary");
  assert.equal(notFound.exitCode, 127);
  assert.ok(err(notFound).join("\n").includes("/no/such/binary"));
});

test("commands: streaming handlers see events as they happen, in order", async () => {
  // Each line waits for a file that the handler of the previous line
  // writes: the command can only finish if every line was delivered live.
  const go = (n) => `/tmp/osb-live-${RUN}-${n}`;
  const wait = (n) => `while [ ! -e ${go(n)} ]; do sleep 0.05; done`;
  const seen = [];
  const writes = [];
  let init;
  let complete;
  const exec = await sbx.commands.run(
    `echo "line 1"; ${wait(2)}; echo "line 2"; ${wait(3)}; echo "line 3"; echo done >&2`,
    undefined,
    {
      onInit: (i) => { init = i; seen.push("init"); },
      onStdout: (m) => {
        seen.push(m.text);
        const n = Number(m.text.split(" ")[1]) + 1;
        if (n <= 3) writes.push(sbx.files.writeFiles([{ path: go(n), data: "go" }]));
      },
      onStderr: (m) => seen.push(`err:${m.text}`),
      onExecutionComplete: (c) => { complete = c; seen.push("complete"); },
    },
  );
  await Promise.all(writes);
  assert.deepEqual(seen, ["init", "line 1", "line 2", "line 3", "err:done", "complete"]);
  assert.equal(init.id, exec.id);
  assert.equal(typeof complete.executionTimeMs, "number");
});

test("commands: runStream yields raw events with timestamps", async () => {
  const events = [];
  for await (const ev of sbx.commands.runStream("echo raw")) events.push(ev);
  const types = events.map((e) => e.type).filter((t) => t !== "ping");
  assert.deepEqual(types, ["init", "stdout", "execution_complete"]);
  for (const ev of events) assert.equal(typeof ev.timestamp, "number");
  assert.equal(events.find((e) => e.type === "stdout").text, "raw");
});

test("commands: workingDirectory, envs and uid/gid", async () => {
  const exec = await sbx.commands.run('pwd; echo "$X-$Y"', {
    workingDirectory: "/tmp",
    envs: { X: "ex", Y: "why" },
  });
  assert.deepEqual(out(exec), ["/tmp", "ex-why"]);
  const id = await sbx.commands.run("id -u; id -g", { uid: 65534, gid: 65534 });
  assert.equal(id.exitCode, 0, err(id).join("\n"));
  assert.deepEqual(out(id), ["65534", "65534"]);
});

test("commands: timeoutSeconds kills a command that runs too long", async () => {
  const t0 = Date.now();
  const exec = await sbx.commands.run("echo started; sleep 30", { timeoutSeconds: 1 });
  const took = Date.now() - t0;
  assert.ok(took >= 900, `returned after ${took} ms, before the timeout`);
  assert.deepEqual(out(exec), ["started"]);
  assert.ok(exec.error, "a timed-out command ends with an error event");
  assert.notEqual(exec.exitCode, 0);
});

test("commands: background command with status and incremental logs", async () => {
  const exec = await sbx.commands.run("echo start; sleep 0.6; echo finish; echo warn >&2; exit 4", { background: true });
  assert.ok(exec.id, "background run returns the command id");
  assert.deepEqual(exec.logs.stdout, []);

  const running = await sbx.commands.getCommandStatus(exec.id);
  assert.equal(running.id, exec.id);
  assert.equal(running.running, true);
  assert.ok(running.startedAt instanceof Date);
  assert.equal(running.exitCode, null);

  const first = await waitFor(async () => {
    const l = await sbx.commands.getBackgroundCommandLogs(exec.id);
    return l.content.includes("start\n") ? l : null;
  }, "the first log line");
  assert.equal(first.content, "start\n");
  assert.equal(first.cursor, 6);

  const done = await waitFor(async () => {
    const s = await sbx.commands.getCommandStatus(exec.id);
    return s.running ? null : s;
  }, "the background command to finish");
  assert.equal(done.exitCode, 4);
  assert.ok(done.finishedAt instanceof Date);
  assert.ok(done.finishedAt >= done.startedAt);

  const rest = await sbx.commands.getBackgroundCommandLogs(exec.id, first.cursor);
  assert.equal(rest.content, "finish\nwarn\n");
  assert.equal(rest.cursor, first.cursor + rest.content.length);
  const tail = await sbx.commands.getBackgroundCommandLogs(exec.id, rest.cursor);
  assert.equal(tail.content, "");
});

test("commands: interrupt stops a running background command", async () => {
  const exec = await sbx.commands.run("sleep 60", { background: true });
  await sleep(100);
  assert.equal((await sbx.commands.getCommandStatus(exec.id)).running, true);
  await sbx.commands.interrupt(exec.id);
  const s = await waitFor(async () => {
    const st = await sbx.commands.getCommandStatus(exec.id);
    return st.running ? null : st;
  }, "the interrupted command to stop", 8000);
  assert.notEqual(s.exitCode, 0);
});

test("sessions: env and cwd persist between runs; exit codes; delete", async () => {
  const sid = await sbx.commands.createSession({ workingDirectory: "/tmp/sdk-session" });
  assert.equal(typeof sid, "string");
  const first = await sbx.commands.runInSession(sid, "pwd; export SESSION_VAR=kept; mkdir -p sub; cd sub");
  assert.equal(first.exitCode, 0);
  assert.deepEqual(out(first), ["/tmp/sdk-session"]);
  const second = await sbx.commands.runInSession(sid, 'echo "$SESSION_VAR"; pwd');
  assert.deepEqual(out(second), ["kept", "/tmp/sdk-session/sub"]);
  const failed = await sbx.commands.runInSession(sid, "echo before; false");
  assert.equal(failed.exitCode, 1);
  assert.deepEqual(out(failed), ["before"]);
  const elsewhere = await sbx.commands.runInSession(sid, "pwd", { workingDirectory: "/" });
  assert.deepEqual(out(elsewhere), ["/"]);

  const lines = [];
  await sbx.commands.runInSession(sid, "echo one; echo two", undefined, { onStdout: (m) => lines.push(m.text) });
  assert.deepEqual(lines, ["one", "two"]);

  await sbx.commands.deleteSession(sid);
  await assert.rejects(sbx.commands.runInSession(sid, "echo gone"));
});

test("sessions: two sessions are independent", async () => {
  const a = await sbx.commands.createSession();
  const b = await sbx.commands.createSession();
  assert.notEqual(a, b);
  await sbx.commands.runInSession(a, "export WHO=a");
  await sbx.commands.runInSession(b, "export WHO=b");
  assert.deepEqual(out(await sbx.commands.runInSession(a, 'echo "$WHO"')), ["a"]);
  assert.deepEqual(out(await sbx.commands.runInSession(b, 'echo "$WHO"')), ["b"]);
  await sbx.commands.deleteSession(a);
  await sbx.commands.deleteSession(b);
});
