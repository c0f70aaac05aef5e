// Times the official JS SDK's Sandbox.create end to end (create, both
// endpoint lookups, the first /ping) against a running server, serially,
// killing each sandbox after it is ready. Prints one JSON line:
// {"n":N,"create_ms":[...],"kill_ms":[...],"raw_ms":[...],"failures":F,"errors":[...]},
// where raw_ms times the same four HTTP calls (create, endpoints 44772 and
// 18080, /ping) made with plain fetch on a kept-alive connection: the
// difference is the SDK's own cost (a new connection pool per Sandbox, ...).
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
const base = `http://${process.env.OPEN_SANDBOX_DOMAIN}`;
const hdr = { "OPEN-SANDBOX-API-KEY": process.env.OPEN_SANDBOX_API_KEY ?? "", "content-type": "application/json" };
const body = JSON.stringify({
  image: { uri: image }, entrypoint: ["tail", "-f", "/dev/null"], resourceLimits: { cpu: "1", memory: "2Gi" },
  timeout: 600, env: {}, metadata: {}, extensions: {}, secureAccess: false,
});
const rawMs = [];
for (let i = 0; i < n + 2; i++) {
  try {
    const t0 = performance.now();
    const created = await (await fetch(`${base}/v1/sandboxes`, { method: "POST", headers: hdr, body })).json();
    const ep = await (await fetch(`${base}/v1/sandboxes/${created.id}/endpoints/44772?use_server_proxy=false`, { headers: hdr })).json();
    await (await fetch(`${base}/v1/sandboxes/${created.id}/endpoints/18080?use_server_proxy=false`, { headers: hdr })).json();
    const ping = await fetch(`http://${ep.endpoint}/ping`, { headers: { ...hdr, ...(ep.headers ?? {}) } });
    await ping.arrayBuffer();
    if (!ping.ok) throw new Error(`ping ${ping.status}`);
    if (i >= 2) rawMs.push(performance.now() - t0);
    await (await fetch(`${base}/v1/sandboxes/${created.id}`, { method: "DELETE", headers: hdr })).arrayBuffer();
  } catch (e) {
    errors.push(`raw: ${String(e?.message ?? e).slice(0, 200)}`);
  }
}
console.log(JSON.stringify({ n, create_ms: createMs, kill_ms: killMs, raw_ms: rawMs, failures: errors.length, errors: errors.slice(0, 5) }));
