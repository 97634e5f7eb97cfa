// Browser tests of the playground: Debian's Chromium drives the built UI, served by the real
// server and worker (`python -m psych_playground dev`) on a fresh SQLite file. A second pair runs
// on PostgreSQL (a fresh schema), whose live channel carries the model's words to the chat while
// it writes them: the chat test talks to that one. What the HTTP API cannot make (a stuck run)
// is written into the SQLite store before its server starts, and both stores are discarded once
// their servers stop (apps/playground/e2e/serve.sh).
//
// Run from the repository root, after `npm run build`:
//   PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PSYCH_CHROMIUM=/usr/bin/chromium npm run e2e
// Playwright's own browsers are never downloaded: PSYCH_CHROMIUM (default /usr/bin/chromium)
// is the browser.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { defineConfig } from "@playwright/test";

const uiDir = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(uiDir, "../../..");
const chromium = process.env.PSYCH_CHROMIUM ?? "/usr/bin/chromium";

if (!fs.existsSync(path.join(uiDir, "dist", "index.html"))) {
  throw new Error(
    `the playground UI is not built (no ${path.join(uiDir, "dist", "index.html")}): ` +
      "run `npm run build --workspace apps/playground/ui` at the repository root first",
  );
}
if (!fs.existsSync(chromium)) {
  throw new Error(
    `no Chromium at ${chromium}: install Debian's (bash scripts/browser-host.sh start, or ` +
      "apt-get install -y --no-install-recommends chromium) or point PSYCH_CHROMIUM at one",
  );
}

/** A loopback port nobody listens on now (asked of the kernel in a child, synchronously). */
function freePort(): number {
  const script =
    "const s=require('node:net').createServer();" +
    "s.listen(0,'127.0.0.1',()=>{process.stdout.write(String(s.address().port));s.close();});";
  return Number(execFileSync(process.execPath, ["-e", script], { encoding: "utf8" }));
}

// The config is loaded again in every test worker: the first load (the runner's) chooses the
// state directory and the port, and the workers inherit them through the environment.
if (process.env.PSYCH_E2E_STATE === undefined) {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "psych-playground-e2e-"));
  process.env.PSYCH_E2E_STATE = stateDir;
  process.env.PSYCH_E2E_PORT = String(freePort());
  let livePort = freePort();
  while (String(livePort) === process.env.PSYCH_E2E_PORT) livePort = freePort();
  process.env.PSYCH_E2E_LIVE_PORT = String(livePort);
  // An absolute path after `sqlite:///`, as the project's store URLs are written.
  process.env.PSYCH_E2E_STORE = `sqlite:///${path.join(stateDir, "playground.db")}`;
  process.env.PSYCH_E2E_SEEDED = path.join(stateDir, "seeded.json");
  const postgres =
    process.env.PSYCH_E2E_POSTGRES_DSN ??
    process.env.PSYCH_TEST_POSTGRES_DSN ??
    "postgresql://postgres@127.0.0.1:5432/postgres";
  const schema = `e2e_${path.basename(stateDir).replace(/[^a-z0-9]/gi, "").toLowerCase()}`;
  const separator = postgres.includes("?") ? "&" : "?";
  process.env.PSYCH_E2E_LIVE_STORE = `${postgres}${separator}schema=${schema}`;
}
const port = Number(process.env.PSYCH_E2E_PORT);
const livePort = Number(process.env.PSYCH_E2E_LIVE_PORT);
const baseURL = `http://127.0.0.1:${port}`;
const liveBaseURL = `http://127.0.0.1:${livePort}`;
process.env.PSYCH_E2E_REPO = repoRoot;
process.env.PSYCH_E2E_BASE_URL = baseURL;
process.env.PSYCH_E2E_LIVE_BASE_URL = liveBaseURL;
// The tests speak to the deterministic demo model; a key here would switch to a real one.
delete process.env.OPENAI_API_KEY;

export default defineConfig({
  testDir: "e2e",
  testMatch: "*.spec.ts",
  fullyParallel: false,
  workers: 1,
  retries: 0,
  forbidOnly: true,
  reporter: "list",
  timeout: 120_000,
  expect: { timeout: 15_000 },
  // What a failed test leaves (its error context): one folder, emptied at the start of a run.
  outputDir: path.join(os.tmpdir(), "playwright-psych-playground"),
  use: {
    baseURL,
    headless: true,
    trace: "off",
    screenshot: "off",
    video: "off",
    viewport: { width: 1280, height: 800 },
    browserName: "chromium",
    launchOptions: {
      executablePath: chromium,
      // This machine's network is closed: Chromium must not try its background connections.
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    },
  },
  webServer: [
    playground(process.env.PSYCH_E2E_STORE ?? "", baseURL, port, process.env.PSYCH_E2E_SEEDED),
    playground(process.env.PSYCH_E2E_LIVE_STORE ?? "", liveBaseURL, livePort),
  ],
});

/** The playground's server and worker on `store` (seeded first when `seeded` names the file
 * for what was written), discarded when they stop. */
function playground(store: string, url: string, listen: number, seeded?: string) {
  return {
    command: "bash apps/playground/e2e/serve.sh",
    cwd: repoRoot,
    url: `${url}/api/health`,
    reuseExistingServer: false,
    timeout: 120_000,
    stdout: "ignore" as const,
    stderr: "pipe" as const,
    gracefulShutdown: { signal: "SIGTERM" as const, timeout: 20_000 },
    env: {
      PSYCH_STORE: store,
      PLAYGROUND_HOST: "127.0.0.1",
      PLAYGROUND_PORT: String(listen),
      PSYCH_E2E_SEED: seeded ?? "",
      UV_PYTHON_DOWNLOADS: "never",
    },
  };
}
