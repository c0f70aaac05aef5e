// Times the official JS SDK's Sandbox.create end to end (POST /v1/sandboxes,
// the endpoint lookups for 44772 and 18080, then /ping until it answers, with
// the SDK's default polling: one at once, then every 200 ms) in rounds of
// CONCURRENCY creates started together; every sandbox of a round is killed
// once the whole round is ready. Used by bench/create_bench.py.
//
// Usage: node sdk_create.mjs N CONCURRENCY IMAGE [POOL]
//   POOL: create with extensions {poolRef: POOL} (a pool on the server)
// Environment: OPEN_SANDBOX_DOMAIN, OPEN_SANDBOX_API_KEY, OSB_SDK_DIR (the
// folder whose node_modules holds @alibaba-group/opensandbox: tests/sdk).
// Prints one JSON line: {"n", "concurrency", "create_ms": [...],
// "rounds": [{"wall_ms", "first_ms", "ok"}], "failures", "errors": [...]}.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const sdkDir = process.env.OSB_SDK_DIR;
const { ConnectionConfig, Sandbox } = await import(
  pathToFileURL(join(sdkDir, "node_modules/@alibaba-group/opensandbox/dist/index.js")).href
);

const n = Number(process.argv[2] ?? 20);
const concurrency = Number(process.argv[3] ?? 1);
const image = process.argv[4] ?? "busybox";
const pool = process.argv[5];
const config = new ConnectionConfig({
  domain: process.env.OPEN_SANDBOX_DOMAIN,
  apiKey: process.env.OPEN_SANDBOX_API_KEY,
  disableMetrics: true,
});

const createMs = [];
const rounds = [];
const errors = [];
let failures = 0;

// One create: its sandbox and how long Sandbox.create took, or null.
async function one() {
  const t0 = performance.now();
  try {
    const sbx = await Sandbox.create({
      connectionConfig: config,
      image,
      entrypoint: ["tail", "-f", "/dev/null"],
      extensions: pool ? { poolRef: pool } : {},
    });
    return { sbx, ms: performance.now() - t0, end: performance.now() };
  } catch (e) {
    failures++;
    if (errors.length < 5) errors.push(String(e?.message ?? e).slice(0, 300));
    return null;
  }
}

async function round(count, keep) {
  const t0 = performance.now();
  const got = await Promise.all(Array.from({ length: count }, one));
  const ok = got.filter((g) => g);
  if (keep) {
    for (const g of ok) createMs.push(g.ms);
    rounds.push({
      wall_ms: Math.max(...ok.map((g) => g.end), t0) - t0,
      first_ms: ok.length ? Math.min(...ok.map((g) => g.end)) - t0 : null,
      ok: ok.length,
    });
  }
  await Promise.all(ok.map(async (g) => {
    await g.sbx.kill();
    await g.sbx.close();
  }));
}

await round(Math.min(concurrency, 2), false); // module loading, first connections
const before = failures;
for (let done = 0; done < n; done += concurrency) await round(Math.min(concurrency, n - done), true);
failures -= before;
console.log(JSON.stringify({ n, concurrency, create_ms: createMs, rounds, failures, errors }));
