// The README demo, through the official JS SDK: create a sandbox from the
// `host` image, run a command, write and read a file, run Python in a code
// context, delete the sandbox. Run by scripts/demo-server.sh, which starts
// the server and sets OPEN_SANDBOX_DOMAIN (and OPEN_SANDBOX_API_KEY if any).
import { ConnectionConfig, Sandbox } from "@alibaba-group/opensandbox";

import { codeClient } from "./lib/code.mjs";

const config = new ConnectionConfig({
  domain: process.env.OPEN_SANDBOX_DOMAIN ?? "127.0.0.1:8080",
  apiKey: process.env.OPEN_SANDBOX_API_KEY,
});
const ms = (t0) => `${(performance.now() - t0).toFixed(1)} ms`;
const indent = (lines) => lines.map((l) => `    ${l}`).join("\n");

let t0 = performance.now();
const sandbox = await Sandbox.create({ connectionConfig: config, image: "host", timeoutSeconds: 300 });
try {
  const info = await sandbox.getInfo();
  console.log(`== Sandbox.create({ image: "host" }): ${sandbox.id} ${info.status.state} in ${ms(t0)}`);
  console.log(`   expires at ${info.expiresAt?.toISOString()}`);

  t0 = performance.now();
  const cmd = 'echo "hello from $(hostname)"; uname -sr; echo "pid $$, uid $(id -u)"; echo / = $(ls /)';
  const exec = await sandbox.commands.run(cmd);
  console.log(`== commands.run(${JSON.stringify(cmd)}): exit code ${exec.exitCode} in ${ms(t0)}`);
  console.log(indent(exec.logs.stdout.map((m) => m.text)));

  t0 = performance.now();
  await sandbox.files.writeFiles([{ path: "/tmp/demo/hello.txt", data: "Hello from the SDK!\n", mode: 644 }]);
  const text = await sandbox.files.readFile("/tmp/demo/hello.txt");
  const st = (await sandbox.files.getFileInfo(["/tmp/demo/hello.txt"]))["/tmp/demo/hello.txt"];
  console.log(`== files.writeFiles + readFile /tmp/demo/hello.txt (${st.size} bytes, mode ${st.mode}) in ${ms(t0)}`);
  console.log(indent([text.trimEnd()]));

  t0 = performance.now();
  const code = await codeClient(sandbox, config.apiKey);
  const ctx = await code.createContext("python");
  await code.run(ctx.id, "import platform\nsquares = [i * i for i in range(10)]");
  const run = await code.run(ctx.id, "print('python', platform.python_version())\nsum(squares)");
  if (run.error) throw new Error(`python failed: ${run.error.name}: ${run.error.value}`);
  console.log(`== Python code context ${ctx.id}: two runs sharing state in ${ms(t0)}`);
  console.log(indent([...run.logs.stdout.map((m) => m.text.trimEnd()), `result: ${run.result.map((r) => r.text).join(", ")}`]));
} finally {
  t0 = performance.now();
  await sandbox.kill();
  await sandbox.close();
  console.log(`== sandbox.kill(): deleted in ${ms(t0)}`);
}
