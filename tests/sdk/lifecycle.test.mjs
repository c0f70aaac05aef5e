// Lifecycle through the official SDK: create (env, metadata, resource limits,
// timeout, entrypoint), get, list with filters and pagination, metadata
// patch, renew, pause/resume, kill.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { SandboxManager } from "@alibaba-group/opensandbox";

import {
  API_KEY, IMAGE, RUN, cleanup, config, create, manager, out, rejectsWithStatus,
  release, secondsApart, sleep, track, waitFor,
} from "./lib/env.mjs";

const SUITE = { "osb-sdk-run": RUN, suite: "lifecycle" };
let main; // env + metadata + limits + timeout 300
let other; // second sandbox for list filters
let mgr;

before(async () => {
  mgr = manager();
  main = await create({
    env: { GREETING: "hello sdk", SECOND: "two words" },
    metadata: { ...SUITE, team: "sdk", "example.com/tier": "gold" },
    resource: { cpu: "500m", memory: "256Mi" },
    timeoutSeconds: 300,
  });
  other = await create({ metadata: { ...SUITE, team: "other" } });
});

after(async () => {
  await cleanup();
  await mgr?.close();
});

test("create: returns a ready sandbox (Running, entrypoint, image, createdAt, expiresAt = createdAt + timeout)", async () => {
  assert.equal(typeof main.id, "string");
  assert.ok(main.id.length > 0);
  const info = await main.getInfo();
  assert.equal(info.id, main.id);
  assert.equal(info.status.state, "Running");
  assert.deepEqual(info.entrypoint, ["tail", "-f", "/dev/null"]);
  assert.equal(info.image?.uri, IMAGE);
  assert.ok(info.createdAt instanceof Date);
  assert.ok(secondsApart(info.createdAt, Date.now()) < 60, `createdAt ${info.createdAt.toISOString()} is not recent`);
  assert.ok(info.expiresAt instanceof Date, "expiresAt must be set when a timeout was given");
  const delta = (info.expiresAt.getTime() - info.createdAt.getTime()) / 1000;
  assert.ok(Math.abs(delta - 300) < 2, `expiresAt - createdAt = ${delta} s, want 300`);
  assert.equal(await main.isHealthy(), true);
});

test("create: env reaches commands run in the sandbox", async () => {
  const exec = await main.commands.run('printf "%s|%s\\n" "$GREETING" "$SECOND"');
  assert.equal(exec.exitCode, 0);
  assert.deepEqual(out(exec), ["hello sdk|two words"]);
});

test("create: metadata is stored and returned", async () => {
  const info = await main.getInfo();
  assert.deepEqual(info.metadata, { ...SUITE, team: "sdk", "example.com/tier": "gold" });
});

test("create: resource limits are enforced (metrics see 0.5 CPU and 256 MiB)", async () => {
  const m = await main.getMetrics();
  assert.ok(Math.abs(m.cpuCount - 0.5) < 0.01, `cpuCount ${m.cpuCount}, want 0.5`);
  assert.ok(Math.abs(m.memoryTotalMiB - 256) < 0.5, `memoryTotalMiB ${m.memoryTotalMiB}, want 256`);
});

test("create: timeoutSeconds null means manual cleanup (no expiresAt)", async () => {
  const sbx = await create({ timeoutSeconds: null, metadata: SUITE });
  const info = await sbx.getInfo();
  assert.equal(info.expiresAt, null);
  assert.equal(info.status.state, "Running");
  // Renewing a sandbox that never expires is a conflict (protocol 1.7).
  await rejectsWithStatus(sbx.renew(600), 409);
  await sbx.kill();
  await release(sbx);
});

test("create: a custom entrypoint runs alongside execd", async () => {
  const sbx = await create({
    entrypoint: ["/bin/sh", "-c", "echo started > /tmp/entrypoint.out; exec sleep 1000"],
    metadata: SUITE,
  });
  const info = await sbx.getInfo();
  assert.deepEqual(info.entrypoint, ["/bin/sh", "-c", "echo started > /tmp/entrypoint.out; exec sleep 1000"]);
  const text = await waitFor(async () => (await sbx.files.readFile("/tmp/entrypoint.out")) || null,
    "the entrypoint's output file", 5000);
  assert.equal(text, "started\n");
  const ps = await sbx.commands.run("for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done");
  assert.equal(ps.exitCode, 0);
  assert.ok(out(ps).some((l) => /sleep 1000/.test(l)), `entrypoint not running:\n${out(ps).join("\n")}`);
  await sbx.kill();
  await release(sbx);
});

test("create: an unknown image is refused with an error body and nothing is left behind", async () => {
  const before = await mgr.listSandboxInfos({ metadata: { ...SUITE, probe: "badimage" } });
  assert.equal(before.items.length, 0);
  let err;
  try {
    await create({ image: "no-such-image-osb-sdk", metadata: { ...SUITE, probe: "badimage" } });
  } catch (e) {
    err = e;
  }
  assert.ok(err, "creating from an unknown image must fail");
  assert.ok([400, 404].includes(err.statusCode), `status ${err.statusCode}: ${err.message}`);
  assert.ok(err.error?.code && err.error.code !== "UNEXPECTED_RESPONSE", `code ${err.error?.code}`);
  const after = await mgr.listSandboxInfos({ metadata: { ...SUITE, probe: "badimage" } });
  assert.equal(after.items.length, 0, "a refused create must not leave a sandbox");
});

test("get: SandboxManager.getSandboxInfo returns the sandbox record", async () => {
  const info = await mgr.getSandboxInfo(main.id);
  assert.equal(info.id, main.id);
  assert.equal(info.status.state, "Running");
  assert.deepEqual(info.entrypoint, ["tail", "-f", "/dev/null"]);
  assert.equal(info.metadata?.team, "sdk");
  assert.ok(info.createdAt instanceof Date);
});

test("get: an unknown sandbox id is 404 with {code, message}", async () => {
  await rejectsWithStatus(mgr.getSandboxInfo("00000000-0000-4000-8000-000000000000"), 404);
});

test("list: metadata filter (AND semantics, prefixed keys)", async () => {
  const both = await mgr.listSandboxInfos({ metadata: SUITE });
  const ids = both.items.map((s) => s.id);
  assert.ok(ids.includes(main.id) && ids.includes(other.id), `got ${ids}`);

  const sdk = await mgr.listSandboxInfos({ metadata: { ...SUITE, team: "sdk" } });
  assert.deepEqual(sdk.items.map((s) => s.id), [main.id]);

  const prefixed = await mgr.listSandboxInfos({ metadata: { "osb-sdk-run": RUN, "example.com/tier": "gold" } });
  assert.deepEqual(prefixed.items.map((s) => s.id), [main.id]);

  const none = await mgr.listSandboxInfos({ metadata: { ...SUITE, team: "sdk", "example.com/tier": "silver" } });
  assert.deepEqual(none.items, []);
  assert.equal(none.pagination?.totalItems, 0);

  for (const item of sdk.items) {
    assert.ok(item.createdAt instanceof Date);
    assert.ok(Array.isArray(item.entrypoint));
    assert.equal(typeof item.status.state, "string");
  }
});

test("list: state filter (case-insensitive, repeatable)", async () => {
  const running = await mgr.listSandboxInfos({ metadata: SUITE, states: ["Running"] });
  assert.ok(running.items.some((s) => s.id === main.id));
  assert.ok(running.items.every((s) => s.status.state === "Running"));
  const upper = await mgr.listSandboxInfos({ metadata: SUITE, states: ["RUNNING"] });
  assert.deepEqual(upper.items.map((s) => s.id).sort(), running.items.map((s) => s.id).sort());
  const paused = await mgr.listSandboxInfos({ metadata: SUITE, states: ["Paused"] });
  assert.deepEqual(paused.items, []);
  const either = await mgr.listSandboxInfos({ metadata: SUITE, states: ["Paused", "Running"] });
  assert.equal(either.items.length, running.items.length);
});

test("list: pagination (newest first, page/pageSize/totalItems/totalPages/hasNextPage)", async () => {
  const all = await mgr.listSandboxInfos({ metadata: SUITE, pageSize: 200 });
  const n = all.items.length;
  assert.ok(n >= 2);
  const times = all.items.map((s) => s.createdAt.getTime());
  assert.deepEqual(times, [...times].sort((a, b) => b - a), "items must be sorted by createdAt descending");

  const p1 = await mgr.listSandboxInfos({ metadata: SUITE, page: 1, pageSize: 1 });
  assert.equal(p1.items.length, 1);
  assert.deepEqual(p1.pagination, { page: 1, pageSize: 1, totalItems: n, totalPages: n, hasNextPage: true });
  assert.equal(p1.items[0].id, all.items[0].id);
  const last = await mgr.listSandboxInfos({ metadata: SUITE, page: n, pageSize: 1 });
  assert.equal(last.items[0].id, all.items[n - 1].id);
  assert.equal(last.pagination.hasNextPage, false);
  const past = await mgr.listSandboxInfos({ metadata: SUITE, page: n + 1, pageSize: 1 });
  assert.deepEqual(past.items, []);
});

test("patch metadata: merge patch adds, replaces and deletes; reserved prefix is 400", async () => {
  const patched = await main.patchMetadata({ team: "sdk2", added: "yes", "example.com/tier": null });
  assert.deepEqual(patched.metadata, { ...SUITE, team: "sdk2", added: "yes" });
  assert.deepEqual((await main.getInfo()).metadata, patched.metadata);
  await rejectsWithStatus(main.patchMetadata({ "opensandbox.io/id": "x" }), 400);
  const restored = await main.patchMetadata({ team: "sdk", added: null, "example.com/tier": "gold" });
  assert.deepEqual(restored.metadata, { ...SUITE, team: "sdk", "example.com/tier": "gold" });
});

test("renew: expiresAt moves to now + timeout", async () => {
  const res = await main.renew(1200);
  assert.ok(res.expiresAt instanceof Date, "renew returns expiresAt");
  assert.ok(secondsApart(res.expiresAt, Date.now() + 1200_000) < 5, `expiresAt ${res.expiresAt.toISOString()}`);
  const info = await main.getInfo();
  assert.ok(secondsApart(info.expiresAt, res.expiresAt) < 1, `get says ${info.expiresAt?.toISOString()}`);
  await mgr.renewSandbox(main.id, 900);
  const again = await main.getInfo();
  assert.ok(secondsApart(again.expiresAt, Date.now() + 900_000) < 5);
});

test("pause/resume: processes freeze while Paused; resume gives a working sandbox; bad transitions are 409", async () => {
  // A ticker (one timestamp every 20 ms) shows whether the sandbox's processes really stopped.
  const bg = await other.commands.run("while :; do date +%s%N >> /tmp/ticks; sleep 0.02; done", { background: true });
  assert.ok(bg.id);
  const ticks = async (s) => (await s.files.readFile("/tmp/ticks")).trim().split("\n").map((t) => Number(BigInt(t) / 1000000n));
  await waitFor(async () => (await ticks(other)).length > 3, "ticks");

  await rejectsWithStatus(mgr.resumeSandbox(other.id), 409);
  await other.pause();
  const pausedAt = Date.now();
  assert.equal((await other.getInfo()).status.state, "Paused");
  const paused = await mgr.listSandboxInfos({ metadata: SUITE, states: ["Paused"] });
  assert.deepEqual(paused.items.map((s) => s.id), [other.id]);
  await rejectsWithStatus(mgr.pauseSandbox(other.id), 409);
  await sleep(700);

  const resumeAt = Date.now();
  const resumed = track(await other.resume());
  const resumedAt = Date.now();
  assert.equal(resumed.id, other.id);
  assert.equal((await resumed.getInfo()).status.state, "Running");
  const exec = await resumed.commands.run("echo after-resume");
  assert.deepEqual(out(exec), ["after-resume"]);

  // Once pause() has returned, nothing may tick until resume() is called;
  // after resume the ticker goes on.
  const after = await waitFor(async () => {
    const t = await ticks(resumed);
    return t[t.length - 1] > resumedAt ? t : null;
  }, "the ticker to run again after resume", 5000);
  const during = after.filter((t) => t > pausedAt + 20 && t < resumeAt);
  const before = after.filter((t) => t <= pausedAt);
  assert.ok(before.length > 3, `${before.length} ticks before the pause`);
  assert.deepEqual(during.map((t) => t - pausedAt), [],
    `ticks (ms after pause() returned) while Paused; resume() was called at +${resumeAt - pausedAt} ms`);
  await resumed.commands.interrupt(bg.id).catch(() => {});
});

test("kill: the sandbox is gone (get 404, not listed); a second kill is 404", async () => {
  const sbx = await create({ metadata: { ...SUITE, probe: "kill" } });
  const id = sbx.id;
  await sbx.kill();
  await release(sbx);
  await rejectsWithStatus(mgr.getSandboxInfo(id), 404);
  const list = await mgr.listSandboxInfos({ metadata: { ...SUITE, probe: "kill" } });
  assert.deepEqual(list.items, []);
  await rejectsWithStatus(mgr.killSandbox(id), 404);
});

test("auth: a wrong API key is refused with 401 INVALID_API_KEY", { skip: API_KEY ? false : "server runs without an API key" }, async () => {
  const bad = SandboxManager.create({ connectionConfig: config({ apiKey: "wrong-key" }) });
  try {
    await rejectsWithStatus(bad.listSandboxInfos({}), 401, "INVALID_API_KEY");
  } finally {
    await bad.close();
  }
});
