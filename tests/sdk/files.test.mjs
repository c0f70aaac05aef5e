// Files through the official SDK: text and binary round trips (both the
// in-memory and the streaming upload paths), 1 MiB, info, list, search, move,
// delete, mkdir, permissions, replace, byte ranges and line ranges.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";

import { RUN, cleanup, create, out, rejectsWithStatus } from "./lib/env.mjs";

const D = "/tmp/sdk-files";
let sbx;

before(async () => {
  sbx = await create({ metadata: { "osb-sdk-run": RUN, suite: "files" } });
  await sbx.files.createDirectories([{ path: D, mode: 755 }]);
});
after(cleanup);

const sha = (b) => createHash("sha256").update(b).digest("hex");

async function exists(path) {
  try {
    await sbx.files.getFileInfo([path]);
    return true;
  } catch (e) {
    if (e.statusCode === 404) return false;
    throw e;
  }
}

test("files: text round trip (UTF-8, mode)", async () => {
  const text = "héllo wörld ✓\nsecond line\n";
  await sbx.files.writeFiles([{ path: `${D}/hello.txt`, data: text, mode: 644 }]);
  assert.equal(await sbx.files.readFile(`${D}/hello.txt`), text);
  const exec = await sbx.commands.run(`cat ${D}/hello.txt`);
  assert.deepEqual(out(exec), ["héllo wörld ✓", "second line"]);
});

test("files: binary round trip (every byte value)", async () => {
  const bytes = new Uint8Array(4096);
  for (let i = 0; i < bytes.length; i++) bytes[i] = i % 256;
  await sbx.files.writeFiles([{ path: `${D}/bin/all-bytes.bin`, data: bytes }]);
  const back = await sbx.files.readBytes(`${D}/bin/all-bytes.bin`);
  assert.equal(back.length, bytes.length);
  assert.ok(Buffer.from(back).equals(Buffer.from(bytes)));
});

test("files: 1 MiB random file, in-memory upload and streaming upload/download", async () => {
  const data = randomBytes(1 << 20);
  await sbx.files.writeFiles([{ path: `${D}/big.bin`, data: new Uint8Array(data) }]);
  const back = await sbx.files.readBytes(`${D}/big.bin`);
  assert.equal(back.length, 1 << 20);
  assert.equal(sha(back), sha(data));

  // The SDK's streaming path (AsyncIterable body, hand-built multipart).
  async function* chunks() {
    for (let off = 0; off < data.length; off += 100_000) yield new Uint8Array(data.subarray(off, off + 100_000));
  }
  await sbx.files.writeFiles([{ path: `${D}/big-streamed.bin`, data: chunks(), mode: 600 }]);
  const h = createHash("sha256");
  let n = 0;
  for await (const c of sbx.files.readBytesStream(`${D}/big-streamed.bin`)) {
    h.update(c);
    n += c.length;
  }
  assert.equal(n, 1 << 20);
  assert.equal(h.digest("hex"), sha(data));
  const sum = await sbx.commands.run(`sha256sum ${D}/big-streamed.bin`);
  assert.equal(out(sum)[0].split(" ")[0], sha(data));
});

test("files: getFileInfo (type, size, mode, owner, times); missing path is 404", async () => {
  await sbx.files.writeFiles([{ path: `${D}/info.txt`, data: "12345", mode: 640 }]);
  const info = await sbx.files.getFileInfo([`${D}/info.txt`, D]);
  const f = info[`${D}/info.txt`];
  assert.equal(f.path, `${D}/info.txt`);
  assert.equal(f.type, "file");
  assert.equal(f.size, 5);
  assert.equal(f.mode, 640);
  assert.equal(f.owner, "root");
  assert.equal(f.group, "root");
  assert.ok(f.modifiedAt instanceof Date && Math.abs(f.modifiedAt.getTime() - Date.now()) < 60_000);
  assert.ok(f.createdAt instanceof Date);
  assert.equal(info[D].type, "directory");
  await rejectsWithStatus(sbx.files.getFileInfo([`${D}/missing.txt`]), 404);
});

test("files: listDirectory (depth 1 and 2)", async () => {
  await sbx.files.createDirectories([{ path: `${D}/tree/a/b`, mode: 755 }]);
  await sbx.files.writeFiles([
    { path: `${D}/tree/top.txt`, data: "t" },
    { path: `${D}/tree/a/mid.txt`, data: "m" },
    { path: `${D}/tree/a/b/deep.txt`, data: "d" },
  ]);
  const one = await sbx.files.listDirectory({ path: `${D}/tree`, depth: 1 });
  assert.deepEqual(one.map((e) => e.path).sort(), [`${D}/tree/a`, `${D}/tree/top.txt`]);
  assert.equal(one.find((e) => e.path.endsWith("/a")).type, "directory");
  const two = await sbx.files.listDirectory({ path: `${D}/tree`, depth: 2 });
  assert.deepEqual(two.map((e) => e.path).sort(),
    [`${D}/tree/a`, `${D}/tree/a/b`, `${D}/tree/a/mid.txt`, `${D}/tree/top.txt`]);
});

test("files: search by glob (recursive, files only)", async () => {
  await sbx.files.writeFiles([
    { path: `${D}/search/x.log`, data: "1" },
    { path: `${D}/search/y.txt`, data: "2" },
    { path: `${D}/search/deeper/z.log`, data: "3" },
  ]);
  const logs = await sbx.files.search({ path: `${D}/search`, pattern: "*.log" });
  assert.deepEqual(logs.map((e) => e.path).sort(), [`${D}/search/deeper/z.log`, `${D}/search/x.log`]);
  for (const e of logs) assert.equal(e.type, "file");
  const all = await sbx.files.search({ path: `${D}/search` });
  assert.equal(all.length, 3);
  assert.deepEqual(await sbx.files.search({ path: `${D}/search`, pattern: "*.none" }), []);
});

test("files: moveFiles renames; a missing source is 404", async () => {
  await sbx.files.writeFiles([{ path: `${D}/mv/src.txt`, data: "moving" }]);
  await sbx.files.moveFiles([{ src: `${D}/mv/src.txt`, dest: `${D}/mv/dest.txt` }]);
  assert.equal(await exists(`${D}/mv/src.txt`), false);
  assert.equal(await sbx.files.readFile(`${D}/mv/dest.txt`), "moving");
  await rejectsWithStatus(sbx.files.moveFiles([{ src: `${D}/mv/nope.txt`, dest: `${D}/mv/x.txt` }]), 404);
});

test("files: deleteFiles and deleteDirectories", async () => {
  await sbx.files.writeFiles([{ path: `${D}/del/a.txt`, data: "a" }, { path: `${D}/del/sub/b.txt`, data: "b" }]);
  await sbx.files.deleteFiles([`${D}/del/a.txt`]);
  assert.equal(await exists(`${D}/del/a.txt`), false);
  await sbx.files.deleteFiles([`${D}/del/never-existed.txt`]); // not an error
  await sbx.files.deleteDirectories([`${D}/del`]);
  assert.equal(await exists(`${D}/del`), false);
});

test("files: createDirectories (nested, mode)", async () => {
  await sbx.files.createDirectories([{ path: `${D}/mk/x/y/z`, mode: 700 }, { path: `${D}/mk/other`, mode: 755 }]);
  const info = await sbx.files.getFileInfo([`${D}/mk/x/y/z`, `${D}/mk/other`]);
  assert.equal(info[`${D}/mk/x/y/z`].type, "directory");
  assert.equal(info[`${D}/mk/x/y/z`].mode, 700);
  assert.equal(info[`${D}/mk/other`].mode, 755);
});

test("files: setPermissions (mode, owner/group by name)", async () => {
  await sbx.files.writeFiles([{ path: `${D}/perm.txt`, data: "p", mode: 644 }]);
  await sbx.files.setPermissions([{ path: `${D}/perm.txt`, mode: 600 }]);
  let info = (await sbx.files.getFileInfo([`${D}/perm.txt`]))[`${D}/perm.txt`];
  assert.equal(info.mode, 600);
  await sbx.files.setPermissions([{ path: `${D}/perm.txt`, mode: 751, owner: "root", group: "root" }]);
  info = (await sbx.files.getFileInfo([`${D}/perm.txt`]))[`${D}/perm.txt`];
  assert.equal(info.mode, 751);
  assert.equal(info.owner, "root");
  // Seen from a process too. Not coreutils' stat: on gVisor (Debian's runsc)
  // its statx(AT_NO_AUTOMOUNT) fails with EINVAL (docs/internals/gvisor.md).
  const ls = await sbx.commands.run(
    `python3 -c 'import os, sys; print("%o" % (os.stat(sys.argv[1]).st_mode & 0o7777))' ${D}/perm.txt`);
  assert.deepEqual(out(ls), ["751"]);
});

test("files: replaceContents and replaceContentsDetailed", async () => {
  await sbx.files.writeFiles([{ path: `${D}/rep.txt`, data: "one two one three one\n" }]);
  await sbx.files.replaceContents([{ path: `${D}/rep.txt`, oldContent: "two", newContent: "2" }]);
  assert.equal(await sbx.files.readFile(`${D}/rep.txt`), "one 2 one three one\n");
  const res = await sbx.files.replaceContentsDetailed([{ path: `${D}/rep.txt`, oldContent: "one", newContent: "1" }]);
  assert.deepEqual(res, [{ path: `${D}/rep.txt`, replacedCount: 3 }]);
  assert.equal(await sbx.files.readFile(`${D}/rep.txt`), "1 2 1 three 1\n");
});

test("files: byte ranges (Range header) and line ranges (offset/limit)", async () => {
  const body = "0123456789abcdefghij";
  await sbx.files.writeFiles([{ path: `${D}/range.txt`, data: body }]);
  assert.equal(await sbx.files.readFile(`${D}/range.txt`, { range: "bytes=10-14" }), "abcde");
  assert.equal(await sbx.files.readFile(`${D}/range.txt`, { range: "bytes=15-" }), "fghij");
  assert.equal(await sbx.files.readFile(`${D}/range.txt`, { range: "bytes=-3" }), "hij");
  const chunks = [];
  for await (const c of sbx.files.readBytesStream(`${D}/range.txt`, { range: "bytes=2-4" })) chunks.push(c);
  assert.equal(Buffer.concat(chunks).toString(), "234");

  await sbx.files.writeFiles([{ path: `${D}/lines.txt`, data: "l1\nl2\nl3\nl4\n" }]);
  assert.equal(await sbx.files.readFile(`${D}/lines.txt`, { offset: 2, limit: 2 }), "l2\nl3");
  assert.equal(await sbx.files.readFile(`${D}/lines.txt`, { offset: 4 }), "l4");
});

test("files: reading a missing file is 404", async () => {
  // The SDK does not parse download error bodies, so only the status is visible.
  await assert.rejects(sbx.files.readFile(`${D}/does-not-exist`), (e) => e.statusCode === 404);
});
