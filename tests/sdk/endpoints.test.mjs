// Endpoints and metrics through the official SDK: an HTTP server started
// inside the sandbox is fetched through the endpoint the SDK resolves, with
// useServerProxy off and on; execd itself works through either endpoint;
// the egress port resolves; metrics report sane numbers.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { RUN, cleanup, connect, create, out, waitFor } from "./lib/env.mjs";

let sbx;
const PAGE = "served from inside the sandbox\n";

before(async () => {
  sbx = await create({ metadata: { "osb-sdk-run": RUN, suite: "endpoints" } });
  await sbx.files.writeFiles([{ path: "/tmp/www/hello.txt", data: PAGE }]);
  const bg = await sbx.commands.run("/usr/bin/python3 -m http.server 8000", {
    background: true,
    workingDirectory: "/tmp/www",
  });
  assert.ok(bg.id);
});
after(cleanup);

function checkEndpointShape(ep, port) {
  assert.equal(typeof ep.endpoint, "string");
  assert.ok(!/^[a-z]+:\/\//i.test(ep.endpoint), `endpoint has a scheme: ${ep.endpoint}`);
  assert.ok(!ep.endpoint.endsWith("/"), `endpoint ends with '/': ${ep.endpoint}`);
  assert.ok(ep.endpoint.length > 0);
  if (ep.headers != null) {
    for (const [k, v] of Object.entries(ep.headers)) assert.equal(typeof v, "string", `header ${k}`);
  }
  assert.ok(ep.endpoint.includes(String(port)), `endpoint for port ${port} does not name it: ${ep.endpoint}`);
}

async function fetchThrough(s, port, path) {
  const ep = await s.getEndpoint(port);
  checkEndpointShape(ep, port);
  const url = `${await s.getEndpointUrl(port)}${path}`;
  return await waitFor(async () => {
    const res = await fetch(url, { headers: ep.headers ?? {} });
    if (res.status !== 200) {
      await res.body?.cancel();
      return null;
    }
    return { res, url, text: await res.text() };
  }, `GET ${url} to answer 200`, 10000, 100);
}

for (const useServerProxy of [false, true]) {
  test(`endpoints: fetch an HTTP server inside the sandbox (useServerProxy=${useServerProxy})`, async () => {
    const s = await connect(sbx.id, { useServerProxy });
    const { res, url, text } = await fetchThrough(s, 8000, "/hello.txt");
    assert.equal(text, PAGE, `body from ${url}`);
    assert.equal(res.headers.get("content-length"), String(Buffer.byteLength(PAGE)));
    if (useServerProxy) {
      const ep = await s.getEndpoint(8000);
      assert.ok(ep.endpoint.includes(`/sandboxes/${sbx.id}/proxy/8000`), `server proxy form: ${ep.endpoint}`);
    }
    // A directory listing and a 404 come back from the sandbox's server too.
    const listing = await fetch(`${await s.getEndpointUrl(8000)}/`, { headers: (await s.getEndpoint(8000)).headers ?? {} });
    assert.equal(listing.status, 200);
    assert.match(await listing.text(), /hello\.txt/);
    const missing = await fetch(`${await s.getEndpointUrl(8000)}/nope`, { headers: (await s.getEndpoint(8000)).headers ?? {} });
    assert.equal(missing.status, 404);
    await missing.body?.cancel();
  });

  test(`endpoints: execd works through its endpoint (useServerProxy=${useServerProxy}), streaming unbuffered`, async () => {
    const s = await connect(sbx.id, { useServerProxy });
    const ep = await s.getEndpoint(44772);
    checkEndpointShape(ep, 44772);
    const ping = await fetch(`${await s.getEndpointUrl(44772)}/ping`, { headers: ep.headers ?? {} });
    assert.equal(ping.status, 200);
    await ping.body?.cancel();

    // Each line waits for a file the previous line's handler writes: the
    // command only finishes if the output is not buffered on the way.
    const go = (n) => `/tmp/ep-live-${useServerProxy}-${n}`;
    const writes = [];
    const exec = await s.commands.run(
      `echo 1; while [ ! -e ${go(2)} ]; do sleep 0.05; done; echo 2; ` +
        `while [ ! -e ${go(3)} ]; do sleep 0.05; done; echo 3`,
      undefined,
      {
        onStdout: (m) => {
          const n = Number(m.text) + 1;
          if (n <= 3) writes.push(s.files.writeFiles([{ path: go(n), data: "go" }]));
        },
      },
    );
    await Promise.all(writes);
    assert.deepEqual(out(exec), ["1", "2", "3"]);
    await s.files.writeFiles([{ path: `/tmp/via-${useServerProxy}.txt`, data: "through the endpoint" }]);
    assert.equal(await s.files.readFile(`/tmp/via-${useServerProxy}.txt`), "through the endpoint");
  });
}

test("endpoints: the egress port 18080 resolves (the SDK needs it at create)", async () => {
  for (const useServerProxy of [false, true]) {
    const s = await connect(sbx.id, { useServerProxy });
    checkEndpointShape(await s.getEndpoint(18080), 18080);
  }
});

test("metrics: cpu, memory and timestamp are sane (default limits 1 CPU, 2 GiB)", async () => {
  const m = await sbx.getMetrics();
  assert.ok(Math.abs(m.cpuCount - 1) < 0.01, `cpuCount ${m.cpuCount}, want 1 (limit cpu "1")`);
  assert.ok(m.cpuUsedPercentage >= 0 && m.cpuUsedPercentage <= 100 * m.cpuCount + 1, `cpu ${m.cpuUsedPercentage}%`);
  assert.ok(Math.abs(m.memoryTotalMiB - 2048) < 1, `memoryTotalMiB ${m.memoryTotalMiB}, want 2048`);
  assert.ok(m.memoryUsedMiB > 0 && m.memoryUsedMiB < m.memoryTotalMiB, `memoryUsedMiB ${m.memoryUsedMiB}`);
  assert.ok(Math.abs(m.timestamp - Date.now()) < 60_000, `timestamp ${m.timestamp}`);
});
