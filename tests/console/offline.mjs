// The test side's Chromium (Debian's, through playwright-core), kept off the
// network: every name resolves to nothing but loopback and the names in
// `exclude`, and the background services are off. Shared by the drivers
// that open pages in it (console.test.mjs, desktop.test.mjs).
import { chromium } from "playwright-core";

export function launchOffline(exclude = ["127.0.0.1"]) {
  const rules = ["MAP * ~NOTFOUND", ...exclude.map((name) => `EXCLUDE ${name}`)].join(", ");
  return chromium.launch({
    executablePath: process.env.OSB_CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", `--host-resolver-rules=${rules}`,
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      "--no-first-run", "--disable-default-apps", "--disable-domain-reliability",
      "--metrics-recording-only", "--no-pings"],
  });
}
