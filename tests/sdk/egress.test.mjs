// Egress policy through the official SDK: Sandbox.create({networkPolicy}),
// getEgressPolicy, patchEgressRules (merge order), deleteEgressRules, with
// the server proxy endpoint off and on; a sandbox without networkPolicy has
// no policy API; the policy is enforced by the DNS forwarder (a denied name
// is NXDOMAIN at once, an allowed one is forwarded: test_sdk.sh points the
// upstream at a closed local port, so it fails differently).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { SandboxApiException } from "@alibaba-group/opensandbox";

import { RUN, cleanup, connect, create, out } from "./lib/env.mjs";

const SUITE = { "osb-sdk-run": RUN, suite: "egress" };
const POLICY = {
  defaultAction: "deny",
  egress: [
    { action: "allow", target: "allowed.test" },
    { action: "allow", target: "*.wild.test" },
  ],
};
let sbx;
let plain;

before(async () => {
  sbx = await create({ metadata: SUITE, networkPolicy: POLICY });
  plain = await create({ metadata: SUITE });
});
after(cleanup);

// libc's answer for a name inside the sandbox: "OK ip", "ERR NONAME" (NXDOMAIN), ...
async function resolve(s, name) {
  const exec = await s.commands.run(
    `/usr/bin/python3 -c 'import socket,sys
try: print("OK", socket.getaddrinfo(sys.argv[1], 80, socket.AF_INET)[0][4][0])
except socket.gaierror as e: print("ERR", {socket.EAI_NONAME: "NONAME", socket.EAI_AGAIN: "AGAIN"}.get(e.errno, e.errno))' ${name}`,
  );
  return out(exec).join("\n");
}

test("egress: getEgressPolicy returns the create-time policy", async () => {
  const pol = await sbx.getEgressPolicy();
  assert.deepEqual(pol, POLICY);
});

test("egress: the 18080 endpoint carries the egress token", async () => {
  const ep = await sbx.getEndpoint(18080);
  assert.equal(typeof ep.headers?.["OPENSANDBOX-EGRESS-AUTH"], "string", JSON.stringify(ep));
  assert.ok(ep.headers["OPENSANDBOX-EGRESS-AUTH"].length >= 16);
  const none = await plain.getEndpoint(18080);
  assert.equal(none.headers?.["OPENSANDBOX-EGRESS-AUTH"], undefined, JSON.stringify(none));
});

test("egress: patchEgressRules merges (patch first, replaced targets dropped) and applies", async () => {
  assert.equal(await resolve(sbx, "denied.test"), "ERR NONAME", "denied before the patch");
  await sbx.patchEgressRules([
    { action: "allow", target: "denied.test" },
    { action: "deny", target: "*.wild.test" },
  ]);
  const pol = await sbx.getEgressPolicy();
  assert.deepEqual(pol, {
    defaultAction: "deny",
    egress: [
      { action: "allow", target: "denied.test" },
      { action: "deny", target: "*.wild.test" },
      { action: "allow", target: "allowed.test" },
    ],
  });
  // Allowed names are forwarded (the upstream is a closed port here: not
  // NXDOMAIN); denied ones are answered NXDOMAIN by the forwarder.
  assert.notEqual(await resolve(sbx, "denied.test"), "ERR NONAME", "denied.test now forwarded");
  assert.equal(await resolve(sbx, "a.wild.test"), "ERR NONAME", "*.wild.test now denied");
});

test("egress: deleteEgressRules removes by target; unknown targets are fine", async () => {
  await sbx.deleteEgressRules(["DENIED.test"]);
  await sbx.deleteEgressRules(["never-there.test"]);
  const pol = await sbx.getEgressPolicy();
  assert.deepEqual(pol.egress, [
    { action: "deny", target: "*.wild.test" },
    { action: "allow", target: "allowed.test" },
  ]);
  assert.equal(await resolve(sbx, "denied.test"), "ERR NONAME", "denied.test denied again");
});

for (const useServerProxy of [false, true]) {
  test(`egress: a connected Sandbox (useServerProxy=${useServerProxy}) reads and changes the same policy`, async () => {
    const s = await connect(sbx.id, { useServerProxy });
    const target = `proxy-${useServerProxy}.test`;
    await s.patchEgressRules([{ action: "allow", target }]);
    const pol = await sbx.getEgressPolicy();
    assert.deepEqual(pol.egress[0], { action: "allow", target });
    await s.deleteEgressRules([target]);
    assert.ok(!(await s.getEgressPolicy()).egress.some((r) => r.target === target));
  });
}

test("egress: a sandbox without networkPolicy has no policy API (the SDK call rejects)", async () => {
  await assert.rejects(plain.getEgressPolicy(), (e) => e instanceof SandboxApiException || e instanceof Error);
  assert.notEqual(await resolve(plain, "denied.test"), "ERR NONAME",
    "no policy: nothing is NXDOMAIN'd by policy");
});

test("egress: a policy with defaultAction allow and no rules", async () => {
  const s = await create({ metadata: SUITE, networkPolicy: { defaultAction: "allow" } });
  const pol = await s.getEgressPolicy();
  assert.deepEqual(pol, { defaultAction: "allow", egress: [] });
});

test("egress: networkPolicy without defaultAction is deny (the SDK fills it in)", async () => {
  const s = await create({ metadata: SUITE, networkPolicy: { egress: [{ action: "allow", target: "x.test" }] } });
  const pol = await s.getEgressPolicy();
  assert.deepEqual(pol, { defaultAction: "deny", egress: [{ action: "allow", target: "x.test" }] });
});
