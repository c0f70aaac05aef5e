// Volumes through the official SDK's `volumes` option: a host directory
// (test_sdk.sh allows only OSB_SDK_HOST_VOLUME), read-write and read-only
// with a subPath, and a server-managed pvc volume shared by two sandboxes
// and removed with the sandbox that created it (deleteOnSandboxTermination);
// refusals come back as SandboxApiException with the volume error codes.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { RUN, cleanup, create, out, rejectsWithStatus, release } from "./lib/env.mjs";

const HOST = process.env.OSB_SDK_HOST_VOLUME;
const VOLUMES_DIR = process.env.OSB_SDK_VOLUMES_DIR;
if (!HOST || !VOLUMES_DIR) {
  throw new Error("OSB_SDK_HOST_VOLUME/OSB_SDK_VOLUMES_DIR are not set: run through tests/sdk/test_sdk.sh");
}
const meta = { "osb-sdk-run": RUN, suite: "volumes" };

after(cleanup);

test("volumes: a host directory, read-write and read-only with a subPath", async () => {
  mkdirSync(join(HOST, "sdk", "sub"), { recursive: true });
  writeFileSync(join(HOST, "sdk", "from-host.txt"), "written on the host\n");
  writeFileSync(join(HOST, "sdk", "sub", "inner.txt"), "inner\n");
  const sbx = await create({
    metadata: meta,
    volumes: [
      { name: "data", host: { path: join(HOST, "sdk") }, mountPath: "/mnt/data" },
      { name: "sub", host: { path: join(HOST, "sdk") }, mountPath: "/mnt/sub", readOnly: true, subPath: "sub" },
    ],
  });
  assert.equal(await sbx.files.readFile("/mnt/data/from-host.txt"), "written on the host\n");
  await sbx.files.writeFiles([{ path: "/mnt/data/from-sandbox.txt", data: "written in the sandbox\n" }]);
  assert.equal(readFileSync(join(HOST, "sdk", "from-sandbox.txt"), "utf8"), "written in the sandbox\n");
  const exec = await sbx.commands.run("cat /mnt/sub/inner.txt; touch /mnt/sub/nope 2>&1; echo rc=$?");
  assert.equal(out(exec)[0], "inner");
  assert.ok(out(exec).some((l) => l.includes("Read-only file system")), out(exec).join("|"));
  assert.ok(!existsSync(join(HOST, "sdk", "sub", "nope")), "the read-only volume was not written");
  await sbx.kill();
  await release(sbx);
});

test("volumes: a pvc volume shared by two sandboxes, removed with the one that created it", async () => {
  const claim = `sdk-${RUN}`.toLowerCase().slice(0, 50);
  const a = await create({
    metadata: meta,
    volumes: [{ name: "work", pvc: { claimName: claim, deleteOnSandboxTermination: true }, mountPath: "/work" }],
  });
  assert.ok(existsSync(join(VOLUMES_DIR, claim, "data")), "the server created the claim");
  await a.files.writeFiles([{ path: "/work/shared.txt", data: "from a\n" }]);
  const b = await create({
    metadata: meta,
    volumes: [{ name: "w", pvc: { claimName: claim, createIfNotExists: false }, mountPath: "/data/w" }],
  });
  assert.equal(await b.files.readFile("/data/w/shared.txt"), "from a\n");
  const exec = await b.commands.run("echo from b > /data/w/back.txt && cat /data/w/shared.txt");
  assert.deepEqual(out(exec), ["from a"]);
  assert.equal(await a.files.readFile("/work/back.txt"), "from b\n");
  await b.kill();
  await release(b);
  assert.ok(existsSync(join(VOLUMES_DIR, claim, "data", "back.txt")), "kept while its creator lives");
  await a.kill();
  await release(a);
  assert.ok(!existsSync(join(VOLUMES_DIR, claim)), "removed with the sandbox that created it");
});

test("volumes: refusals are API errors naming the problem", async () => {
  const e1 = await rejectsWithStatus(
    create({ metadata: meta, volumes: [{ name: "etc", host: { path: "/etc" }, mountPath: "/mnt/etc" }] }),
    400, "VOLUME::HOST_PATH_NOT_ALLOWED");
  assert.match(e1.error.message, /allowed_host_paths/);
  await rejectsWithStatus(
    create({ metadata: meta, volumes: [{ name: "p", pvc: { claimName: "sdk-missing", createIfNotExists: false }, mountPath: "/p" }] }),
    400, "VOLUME::NOT_FOUND");
  await rejectsWithStatus(
    create({
      metadata: meta,
      volumes: [{
        name: "o", mountPath: "/o",
        ossfs: { bucket: "bucket", endpoint: "oss.example.com", accessKeyId: "id", accessKeySecret: "secret" },
      }],
    }),
    400, "VOLUME::UNSUPPORTED_BACKEND");
  await rejectsWithStatus(
    create({ metadata: meta, volumes: [{ name: "x", host: { path: HOST }, mountPath: "/mnt/x", subPath: "../.." }] }),
    400, "SANDBOX::INVALID_PARAMETER");
});
