// Snapshots through the official SDK: SandboxManager.createSnapshot /
// getSnapshot / listSnapshots / deleteSnapshot, and Sandbox.create({snapshotId})
// restoring the files of the source sandbox (and not its later writes).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import {
  RUN, cleanup, create, manager, out, rejectsWithStatus, release, track, waitFor,
} from "./lib/env.mjs";

const SUITE = { "osb-sdk-run": RUN, suite: "snapshots" };
let mgr;
let src; // the source sandbox
let snap; // its snapshot (SnapshotInfo as returned by createSnapshot)
let restored; // a sandbox created from the snapshot

before(async () => {
  mgr = manager();
  src = await create({ metadata: SUITE });
  const w = await src.commands.run(
    "mkdir -p /srv/sdk && echo hello-snapshot > /srv/sdk/f && echo gone > /srv/sdk/del && rm /srv/sdk/del",
  );
  assert.equal(w.exitCode, 0);
});

after(async () => {
  await cleanup();
  if (snap) await mgr?.deleteSnapshot(snap.id).catch(() => {});
  await mgr?.close();
});

test("createSnapshot: returns the accepted snapshot (Creating, sandboxId, name, createdAt)", async () => {
  snap = await mgr.createSnapshot(src.id, { name: "sdk-snap" });
  assert.equal(typeof snap.id, "string");
  assert.match(snap.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(snap.sandboxId, src.id);
  assert.equal(snap.name, "sdk-snap");
  assert.equal(snap.status.state, "Creating");
  assert.equal(snap.status.reason, "snapshot_accepted");
  assert.ok(snap.createdAt instanceof Date && !Number.isNaN(snap.createdAt.getTime()));
});

test("getSnapshot: the snapshot becomes Ready", async () => {
  assert.ok(snap, "needs the snapshot of the previous test");
  const ready = await waitFor(async () => {
    const s = await mgr.getSnapshot(snap.id);
    assert.notEqual(s.status.state, "Failed", `snapshot failed: ${JSON.stringify(s.status)}`);
    return s.status.state === "Ready" ? s : null;
  }, "snapshot Ready", 60000, 100);
  assert.equal(ready.id, snap.id);
  assert.equal(ready.sandboxId, src.id);
  assert.equal(ready.name, "sdk-snap");
  assert.equal(ready.status.reason, "snapshot_ready");
  // written after the snapshot: must not reach sandboxes created from it
  const w = await src.commands.run("echo late > /srv/sdk/late");
  assert.equal(w.exitCode, 0);
});

test("listSnapshots: filters by sandboxId and state", async () => {
  assert.ok(snap);
  const all = await mgr.listSnapshots({ sandboxId: src.id });
  assert.deepEqual(all.items.map((s) => s.id), [snap.id]);
  assert.equal(all.pagination?.totalItems, 1);
  const ready = await mgr.listSnapshots({ sandboxId: src.id, states: ["Ready"] });
  assert.deepEqual(ready.items.map((s) => s.id), [snap.id]);
  const creating = await mgr.listSnapshots({ sandboxId: src.id, states: ["Creating"] });
  assert.deepEqual(creating.items, []);
  const paged = await mgr.listSnapshots({ pageSize: 1, page: 1 });
  assert.equal(paged.items.length, 1);
  assert.equal(paged.pagination?.pageSize, 1);
});

test("Sandbox.create({snapshotId}): restores the files, not later writes", async () => {
  assert.ok(snap);
  restored = await create({ image: undefined, snapshotId: snap.id, metadata: SUITE });
  const info = await restored.getInfo();
  assert.equal(info.status.state, "Running");
  assert.equal(info.snapshotId, snap.id);
  assert.deepEqual(info.entrypoint, ["tail", "-f", "/dev/null"]);
  const r = await restored.commands.run(
    "cat /srv/sdk/f; test -e /srv/sdk/del; echo del=$?; test -e /srv/sdk/late; echo late=$?",
  );
  assert.equal(r.exitCode, 0);
  assert.deepEqual(out(r), ["hello-snapshot", "del=1", "late=1"]);
  assert.equal(await src.isHealthy(), true, "the source sandbox keeps running");
});

test("deleteSnapshot: refused while a sandbox uses it, then deleted", async () => {
  assert.ok(snap && restored);
  await rejectsWithStatus(mgr.deleteSnapshot(snap.id), 409, "SNAPSHOT::IN_USE");
  await restored.kill();
  await release(restored);
  await mgr.deleteSnapshot(snap.id);
  await rejectsWithStatus(mgr.getSnapshot(snap.id), 404, "SNAPSHOT::NOT_FOUND");
  const left = await mgr.listSnapshots({ sandboxId: src.id });
  assert.deepEqual(left.items, []);
  snap = null;
});

test("snapshot errors: unknown sandbox, unknown snapshot, paused source", async () => {
  await rejectsWithStatus(mgr.createSnapshot("00000000-0000-4000-8000-000000000000", {}), 404);
  await rejectsWithStatus(mgr.getSnapshot("00000000-0000-4000-8000-000000000000"), 404,
    "SNAPSHOT::NOT_FOUND");
  await src.pause();
  try {
    await rejectsWithStatus(mgr.createSnapshot(src.id, {}), 409, "SNAPSHOT::INVALID_SOURCE_STATE");
  } finally {
    track(await src.resume());
  }
});
