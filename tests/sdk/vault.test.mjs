// The credential vault through the official SDK (0.1.11 has
// sandbox.credentialVault): Sandbox.create({credentialProxy}), create, get,
// patch with expectedRevision, the list and item calls, delete, and the
// errors its SandboxApiException carries. Injection itself needs a TLS
// upstream; tests/integration/test_credential_vault.py covers it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { RUN, cleanup, create, out, rejectsWithStatus } from "./lib/env.mjs";

const SUITE = { "osb-sdk-run": RUN, suite: "vault" };
const POLICY = { defaultAction: "deny", egress: [{ action: "allow", target: "api.example.com" }] };
const SECRET = "sk-sdk-" + Math.random().toString(16).slice(2);
let sbx;

before(async () => {
  sbx = await create({ metadata: SUITE, networkPolicy: POLICY, credentialProxy: { enabled: true } });
});
after(cleanup);

test("create without networkPolicy is refused with the server's message", async () => {
  await rejectsWithStatus(create({ metadata: SUITE, credentialProxy: { enabled: true } }), 400,
    "SANDBOX::INVALID_PARAMETER");
});

test("the vault's whole life through sandbox.credentialVault", async () => {
  const v = sbx.credentialVault;
  await rejectsWithStatus(v.get(), 404, "EGRESS::VAULT_NOT_FOUND");
  const st = await v.create({
    credentials: [{ name: "tok", source: { type: "inline", value: SECRET } }],
    bindings: [{ name: "api", match: { hosts: ["api.example.com"], paths: ["/v1/*"] },
                 auth: { type: "bearer", credential: "tok" } }],
  });
  assert.equal(st.revision, 1);
  assert.deepEqual(st.credentials.map((c) => c.name), ["tok"]);
  assert.equal(st.bindings[0].auth.type, "bearer");
  assert.ok(!JSON.stringify(st).includes(SECRET), "no value in the answer");
  await rejectsWithStatus(v.create({ credentials: [], bindings: [] }), 409, "EGRESS::VAULT_CONFLICT");
  assert.equal((await v.get()).revision, 1);
  assert.deepEqual((await v.listCredentials()).map((c) => c.name), ["tok"]);
  assert.equal((await v.getCredential("tok")).sourceType, "inline");
  assert.deepEqual((await v.listBindings()).map((b) => b.name), ["api"]);
  assert.deepEqual((await v.getBinding("api")).match.hosts, ["api.example.com"]);
  await rejectsWithStatus(v.getBinding("nope"), 404, "EGRESS::VAULT_NOT_FOUND");
  await rejectsWithStatus(v.patch({ expectedRevision: 9 }), 409, "EGRESS::VAULT_CONFLICT");
  await rejectsWithStatus(
    v.patch({ bindings: { add: [{ name: "x", match: { hosts: ["other.example.com"] },
                                  auth: { type: "bearer", credential: "tok" } }] } }),
    400, "EGRESS::VAULT_INVALID");
  const p = await v.patch({ expectedRevision: 1,
                            credentials: { replace: [{ name: "tok", source: { type: "inline", value: SECRET + "2" } }] } });
  assert.equal(p.revision, 2);
  assert.equal((await v.getCredential("tok")).revision, 2);
  await v.delete();
  await rejectsWithStatus(v.get(), 404, "EGRESS::VAULT_NOT_FOUND");
});

test("the sandbox trusts the server's CA and never sees the value", async () => {
  const exec = await sbx.commands.run(
    "echo $SSL_CERT_FILE $NODE_EXTRA_CA_CERTS; grep -c 'BEGIN CERTIFICATE' /etc/opensandbox/vault-ca.pem; " +
    `grep -rl ${SECRET} /etc /tmp 2>/dev/null | wc -l`);
  assert.deepEqual(out(exec), [
    "/etc/ssl/certs/ca-certificates.crt /etc/opensandbox/vault-ca.pem", "1", "0"]);
});
