// node:test reporter printing the flat TAP lines tests/run.sh counts:
// "ok - <name>" / "not ok - <name>" for each top-level test, with the
// failure (message, expected/actual, first stack frames) as "# " lines so a
// failing run is readable from the summary alone.
import { relative } from "node:path";

function errorLines(err) {
  const e = err?.cause ?? err;
  const out = [];
  const msg = e?.message ?? String(e);
  for (const l of String(msg).split("\n")) if (l.trim()) out.push(l);
  if (e && typeof e === "object") {
    if ("statusCode" in e && e.statusCode != null) out.push(`statusCode: ${e.statusCode}`);
    if (e.error?.code) out.push(`code: ${e.error.code}`);
    if (e.rawBody != null) out.push(`body: ${JSON.stringify(e.rawBody).slice(0, 300)}`);
    const frames = String(e.stack ?? "").split("\n").filter((l) => /tests\/sdk\/.*\.mjs/.test(l) && !l.includes("node_modules"));
    for (const f of frames.slice(0, 3)) out.push(f.trim().replace(process.cwd() + "/", ""));
  }
  return out;
}

export default async function* tapReporter(source) {
  let pass = 0;
  let fail = 0;
  for await (const ev of source) {
    const d = ev.data ?? {};
    if (ev.type === "test:pass" || ev.type === "test:fail") {
      if (d.nesting !== 0 || d.details?.type === "suite") continue;
      const file = d.file ? relative(process.cwd(), d.file) : "";
      const where = file ? `${file.replace(/^tests\/sdk\//, "")}: ` : "";
      if (ev.type === "test:pass") {
        pass++;
        const skip = d.skip ? ` # SKIP ${d.skip === true ? "" : d.skip}` : "";
        const todo = d.todo ? ` # TODO ${d.todo === true ? "" : d.todo}` : "";
        yield `ok - ${where}${d.name}${skip}${todo} (${Math.round(d.details?.duration_ms ?? 0)} ms)\n`;
      } else {
        fail++;
        yield `not ok - ${where}${d.name}\n`;
        for (const l of errorLines(d.details?.error)) yield `#   ${l}\n`;
      }
    } else if (ev.type === "test:diagnostic" && d.nesting === 0) {
      if (/^(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) /.test(d.message)) continue;
      yield `# ${d.message}\n`;
    } else if (ev.type === "test:stderr" || ev.type === "test:stdout") {
      for (const l of String(d.message ?? "").split("\n")) if (l) yield `# ${l}\n`;
    }
  }
  yield `# sdk: ${pass} passed, ${fail} failed\n`;
}
