// The entrypoint is the sandbox's main process: through the official SDK, a
// create whose entrypoint cannot be executed fails with the reason (not a
// readiness timeout), and a sandbox whose entrypoint exits shows Failed with
// the exit code in getInfo.
import { test, after } from "node:test";
import assert from "node:assert/strict";

import { Sandbox } from "@alibaba-group/opensandbox";

import { IMAGE, RUN, cleanup, config, create, waitFor } from "./lib/env.mjs";

const SUITE = { "osb-sdk-run": RUN, suite: "entrypoint" };

after(async () => {
  await cleanup();
});

test("create: an entrypoint that cannot be executed fails with the reason", async () => {
  let err;
  try {
    const sbx = await Sandbox.create({
      connectionConfig: config(),
      image: IMAGE,
      entrypoint: ["/no/such/program"],
      metadata: SUITE,
      readyTimeoutSeconds: 30,
      healthCheckPollingInterval: 50,
    });
    await sbx.kill().catch(() => {});
  } catch (e) {
    err = e;
  }
  assert.ok(err, "Sandbox.create must fail");
  assert.match(String(err.message), /\/no\/such\/program could not be executed: No such file or directory/,
    `the error names the reason: ${err.name}: ${err.message}`);
  assert.notEqual(err.name, "SandboxReadyTimeoutException", "not a readiness timeout");
});

test("getInfo: an entrypoint that exits 3 leaves the sandbox Failed with the code", async () => {
  const sbx = await create({
    entrypoint: ["sh", "-c", "while [ ! -e /tmp/go ]; do sleep 0.05; done; echo bye; exit 3"],
    metadata: SUITE,
  });
  assert.equal((await sbx.getInfo()).status.state, "Running");
  // The entrypoint ends the sandbox as soon as /tmp/go exists, which can
  // cut off the reply to the command that made it ("terminated"): that
  // reply is not what this test is about, the sandbox's end is.
  try {
    await sbx.commands.run("touch /tmp/go");
  } catch (e) {
    if (!/terminated|socket|ECONNRESET/i.test(String(e && (e.message || e)))) throw e;
  }
  const info = await waitFor(async () => {
    const i = await sbx.getInfo();
    return i.status.state === "Failed" ? i : null;
  }, "state Failed", 30000);
  assert.equal(info.status.reason, "ENTRYPOINT_FAILED");
  assert.equal(info.status.message, "entrypoint exited with code 3");
  assert.equal(await sbx.isHealthy(), false, "an ended sandbox is not healthy");
});
