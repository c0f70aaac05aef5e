// Warm pools through the official SDK: a pool made with POST /v1/pools (the
// SDK has no pool API), then Sandbox.create with extensions: {poolRef} claims
// a member. The claimed sandbox is one like any other to the SDK: its env and
// metadata are the request's, its timeout sets expiresAt, commands run, and
// kill() removes it; the pool refills.
import { test, after } from "node:test";
import assert from "node:assert/strict";

import { API_KEY, DOMAIN, RUN, cleanup, create, out, secondsApart, waitFor } from "./lib/env.mjs";

const POOL = `sdk-${RUN}`.toLowerCase().replace(/[^a-z0-9-]/g, "-");
const base = `http://${DOMAIN}`;
const hdr = { "Content-Type": "application/json", ...(API_KEY ? { "OPEN-SANDBOX-API-KEY": API_KEY } : {}) };

async function api(method, path, body) {
  const r = await fetch(`${base}${path}`, { method, headers: hdr, body: body && JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : null };
}

after(async () => {
  await cleanup();
  await api("DELETE", `/v1/pools/${POOL}`);
});

test("Sandbox.create with extensions.poolRef claims a warm member", async () => {
  const r = await api("POST", "/v1/pools", {
    name: POOL,
    template: { image: { uri: process.env.OSB_SDK_IMAGE || "host" }, env: { FROM_POOL: "yes" } },
    capacitySpec: { bufferMin: 1, bufferMax: 1, poolMin: 0, poolMax: 2 },
  });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  await waitFor(async () => (await api("GET", `/v1/pools/${POOL}`)).json.status.available >= 1,
    "the pool to fill", 30000);

  const sbx = await create({
    extensions: { poolRef: POOL },
    env: { GREETING: "hi" },
    metadata: { via: "pool" },
    timeoutSeconds: 600,
  });
  const exec = await sbx.commands.run("echo $GREETING $FROM_POOL");
  assert.deepEqual(out(exec), ["hi yes"], "the request's env over the template's");
  const info = await sbx.getInfo();
  assert.equal(info.status.state, "Running");
  assert.equal(info.metadata.via, "pool");
  assert.equal(secondsApart(info.expiresAt, info.createdAt), 600, "expiresAt from the timeout");
  const listed = (await api("GET", `/v1/sandboxes?metadata=${encodeURIComponent(`osb-sdk-run=${RUN}`)}`)).json;
  assert.deepEqual(listed.items.map((i) => i.id), [sbx.id], "the claimed sandbox is listed, members are not");
  await waitFor(async () => (await api("GET", `/v1/pools/${POOL}`)).json.status.available >= 1,
    "the pool to refill", 30000);
  await sbx.kill();
});

test("Sandbox.create with a poolRef of no pool fails with the reason", async () => {
  await assert.rejects(create({ extensions: { poolRef: "no-such-pool" } }), (e) => {
    assert.match(String(e.message), /no-such-pool not found/);
    return true;
  });
});
