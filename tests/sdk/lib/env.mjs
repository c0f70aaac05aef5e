// Shared helpers for the SDK tests: connection settings from the environment
// (set by test_sdk.sh), sandbox creation with tracking so every sandbox a test
// file makes is killed at the end, and small assertion helpers.
//
// Environment: OPEN_SANDBOX_DOMAIN (host:port of opensandbox-server),
// OPEN_SANDBOX_API_KEY, OSB_SDK_IMAGE (default "host"), OSB_SDK_RUN (a tag put
// in every sandbox's metadata so list filters only see this run's sandboxes).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";

import {
  ConnectionConfig,
  Sandbox,
  SandboxApiException,
  SandboxManager,
} from "@alibaba-group/opensandbox";

export const DOMAIN = process.env.OPEN_SANDBOX_DOMAIN;
export const API_KEY = process.env.OPEN_SANDBOX_API_KEY;
export const IMAGE = process.env.OSB_SDK_IMAGE || "host";
export const RUN = process.env.OSB_SDK_RUN || randomBytes(4).toString("hex");

if (!DOMAIN) {
  throw new Error("OPEN_SANDBOX_DOMAIN is not set: run the SDK tests through tests/sdk/test_sdk.sh");
}

/** A fresh ConnectionConfig (the SDK clones it per Sandbox and per manager). */
export function config(extra = {}) {
  return new ConnectionConfig({
    domain: DOMAIN,
    apiKey: API_KEY,
    requestTimeoutSeconds: 30,
    ...extra,
  });
}

const live = new Set();

/** Sandbox.create from IMAGE, tagged with this run's id; killed by cleanup(). */
export async function create(opts = {}) {
  const { connection, metadata, ...rest } = opts;
  const sbx = await Sandbox.create({
    connectionConfig: config(connection),
    image: IMAGE,
    readyTimeoutSeconds: 20,
    healthCheckPollingInterval: 50,
    metadata: { "osb-sdk-run": RUN, ...(metadata ?? {}) },
    ...rest,
  });
  live.add(sbx);
  return sbx;
}

/** Sandbox.connect to an existing sandbox; closed by cleanup(). */
export async function connect(sandboxId, connection = {}) {
  const sbx = await Sandbox.connect({
    sandboxId,
    connectionConfig: config(connection),
    readyTimeoutSeconds: 20,
    healthCheckPollingInterval: 50,
  });
  live.add(sbx);
  return sbx;
}

export function manager() {
  return SandboxManager.create({ connectionConfig: config() });
}

/** Track a Sandbox obtained some other way (e.g. from resume()). */
export function track(sbx) {
  live.add(sbx);
  return sbx;
}

/** Forget a sandbox that the test already killed (still closes its transport). */
export async function release(sbx) {
  live.delete(sbx);
  await sbx.close().catch(() => {});
}

/** Kill and close every sandbox created through create()/connect(). */
export async function cleanup() {
  const all = [...live];
  live.clear();
  for (const sbx of all) {
    await sbx.kill().catch(() => {});
    await sbx.close().catch(() => {});
  }
}

/**
 * Awaits `promise` and asserts it rejects with a SandboxApiException of the
 * given HTTP status carrying a non-empty {code, message} error body; when
 * `code` is given the error code must match it (a string or a RegExp).
 */
export async function rejectsWithStatus(promise, status, code) {
  let err;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, `expected a rejection with HTTP ${status}, but the call succeeded`);
  assert.ok(err instanceof SandboxApiException, `expected SandboxApiException, got ${err?.name}: ${err?.message}`);
  assert.equal(err.statusCode, status, `HTTP status (error: ${err.error?.code} ${err.message})`);
  assert.ok(err.error?.code && err.error.code !== "UNEXPECTED_RESPONSE",
    `error body must carry a code, got ${JSON.stringify(err.rawBody)}`);
  assert.ok(err.error?.message, "error body must carry a message");
  if (code instanceof RegExp) assert.match(err.error.code, code);
  else if (code) assert.equal(err.error.code, code);
  return err;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls fn until it returns a truthy value; throws with `what` on timeout. */
export async function waitFor(fn, what, timeoutMs = 10000, intervalMs = 50) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ""}`);
    }
    await sleep(intervalMs);
  }
}

/** Seconds between two Dates (or ms timestamps), absolute value. */
export function secondsApart(a, b) {
  return Math.abs(new Date(a).getTime() - new Date(b).getTime()) / 1000;
}

/** stdout lines of a CommandExecution. */
export const out = (exec) => exec.logs.stdout.map((m) => m.text);
export const err = (exec) => exec.logs.stderr.map((m) => m.text);
