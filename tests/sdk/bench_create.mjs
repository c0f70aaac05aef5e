// Times the official JS SDK's Sandbox.create end to end (create, both
// endpoint lookups, the first /ping) against a running server, serially,
// killing each sandbox after it is ready. Prints one JSON line:
// {"n":N,"create_ms":[...],"kill_ms":[...],"failures":F,"errors":[...]}.
// Used by bench/server_bench.py; needs OPEN_SANDBOX_DOMAIN and
// OPEN_SANDBOX_API_KEY. Usage: node bench_create.mjs [N] [image]
import { ConnectionConfig, Sandbox } from "@alibaba-group/opensandbox";

const n = Number(process.argv[2] ?? 30);
const image = process.argv[3] ?? "host";
const config = new ConnectionConfig({
  domain: process.env.OPEN_SANDBOX_DOMAIN,
  apiKey: process.env.OPEN_SANDBOX_API_KEY,
  useServerProxy: process.env.OSB_BENCH_SERVER_PROXY === "1",
  disableMetrics: true,
});

const createMs = [];
const killMs = [];
const errors = [];
// Two warm-up creates: the first pays for module loading and connection setup.
for (let i = 0; i < n + 2; i++) {
  try {
    const t0 = performance.now();
    const sbx = await Sandbox.create({
      connectionConfig: config,
      image, // default readiness polling (first /ping at once, then every 200 ms)
    });
    const t1 = performance.now();
    await sbx.kill();
    const t2 = performance.now();
    await sbx.close();
    if (i >= 2) {
      createMs.push(t1 - t0);
      killMs.push(t2 - t1);
    }
  } catch (e) {
    errors.push(String(e?.message ?? e).slice(0, 200));
  }
}
console.log(JSON.stringify({ n, create_ms: createMs, kill_ms: killMs, failures: errors.length, errors: errors.slice(0, 5) }));
