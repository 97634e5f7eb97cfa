// What the browser tests share: the server's address and store, the HTTP API calls they use to
// set up and check runs, the seeding script, and the README's screenshots.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { expect, type APIRequestContext, type Page } from "@playwright/test";

import type {
  AgentDetail,
  LogPage,
  LogRecord,
  Report,
  RunDetail,
  RunStatusName,
  TimelineData,
} from "../src/api/types";

/** A setting the config put in the environment (see playwright.config.ts). */
function setting(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") {
    throw new Error(`${name} is not set: run the browser tests through playwright.config.ts`);
  }
  return value;
}

export const repoRoot = (): string => setting("PSYCH_E2E_REPO");
/** The server the config runs on PostgreSQL, whose chat shows the model's words live. */
export const liveBaseURL = (): string => setting("PSYCH_E2E_LIVE_BASE_URL");

/** The agent the server publishes at its first start (GET /api/agents/examples). */
export const SUPPORT = "support";

// The API's shapes are the UI's own (src/api/types.ts): a test and the screens read one contract.
export type {
  AgentDetail,
  LogRecord,
  Report,
  RunDetail,
  RunStatusName,
  RunSummary,
  TimelineBar,
  ToolCallReport,
  Usage,
} from "../src/api/types";

export const TERMINAL: readonly RunStatusName[] = ["completed", "failed", "cancelled"];

async function json<T>(request: APIRequestContext, url: string): Promise<T> {
  const response = await request.get(url);
  expect(response.status(), `GET ${url}: ${await response.text()}`).toBe(200);
  return (await response.json()) as T;
}

/** POST /api/runs: admit a run of `agent` on `message`; its id. */
export async function startRun(
  request: APIRequestContext,
  message: string,
  options: { agent?: string; continues?: string } = {},
): Promise<string> {
  const response = await request.post("/api/runs", {
    data: { agent: options.agent ?? SUPPORT, message, continues: options.continues },
  });
  expect(response.status(), `POST /api/runs (${message}): ${await response.text()}`).toBe(202);
  const { run_id } = (await response.json()) as { run_id: string };
  return run_id;
}

export const getRun = (request: APIRequestContext, runId: string): Promise<RunDetail> =>
  json<RunDetail>(request, `/api/runs/${runId}`);

export const getReport = (request: APIRequestContext, runId: string): Promise<Report> =>
  json<Report>(request, `/api/runs/${runId}/report`);

export const getTimeline = (request: APIRequestContext, runId: string): Promise<TimelineData> =>
  json<TimelineData>(request, `/api/runs/${runId}/timeline`);

export const getAgent = (request: APIRequestContext, name: string): Promise<AgentDetail> =>
  json<AgentDetail>(request, `/api/agents/${name}`);

/** Wait until the run's status is one of `statuses` (by default: it has ended). */
export async function waitForRun(
  request: APIRequestContext,
  runId: string,
  options: { statuses?: readonly RunStatusName[]; timeout?: number } = {},
): Promise<RunDetail> {
  const statuses = options.statuses ?? TERMINAL;
  let detail: RunDetail | undefined;
  await expect
    .poll(
      async () => {
        detail = await getRun(request, runId);
        return detail.summary.status;
      },
      {
        message: `run ${runId} never reached ${statuses.join("|")}`,
        timeout: options.timeout ?? 30_000,
        intervals: [100, 250, 500],
      },
    )
    .toMatch(new RegExp(`^(${statuses.join("|")})$`));
  if (detail === undefined) throw new Error(`run ${runId}: no detail read`);
  return detail;
}

/** The run's whole log, read page by page from GET /api/runs/:id/log. */
export async function readLog(request: APIRequestContext, runId: string): Promise<LogPage> {
  const records: LogRecord[] = [];
  let after = -1;
  let last = -1;
  for (;;) {
    const page = await json<LogPage>(request, `/api/runs/${runId}/log?after=${after}&limit=1000`);
    records.push(...page.records);
    last = page.last_seq;
    if (page.next_after === null || page.records.length === 0) break;
    after = page.next_after;
  }
  return { records, next_after: null, last_seq: last };
}

/** The run apps/playground/e2e/seed.py left stuck in the store before the server started. */
export function seededStuckRun(): { run_id: string; attempt: number } {
  const file = setting("PSYCH_E2E_SEEDED");
  return JSON.parse(fs.readFileSync(file, "utf8")) as { run_id: string; attempt: number };
}

/** Save what the page shows (1280x800) as docs/images/playground-NAME.png for the README. */
/** Where screenshots go: the folder PSYCH_SCREENSHOTS names (relative to the repository; the
 * README's are refreshed with `PSYCH_SCREENSHOTS=docs/images scripts/check.sh -s browser`),
 * else a scratch folder, so a check run leaves the committed ones as they are. */
function screenshotFolder(): string {
  const chosen = process.env.PSYCH_SCREENSHOTS;
  if (chosen) return path.resolve(repoRoot(), chosen);
  return path.join(os.tmpdir(), "psych-playground-screenshots");
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.evaluate(async () => {
    await document.fonts.ready;
    window.scrollTo(0, 0);
  });
  await page.screenshot({
    path: path.join(screenshotFolder(), `playground-${name}.png`),
    animations: "disabled",
    caret: "hide",
  });
}

/** The first hex digits of a spec version (``sha256:...``), as any display of it shows them. */
export function versionPrefix(version: string): string {
  return version.replace(/^sha256:/, "").slice(0, 8);
}

/**
 * Every `log-record` the log tab shows (its seq and type), scrolling the list (and pressing
 * `log-load-more`) until `expected` records have been seen or nothing more comes. At every step
 * the rows shown must be in increasing seq order, so no record is shown twice. In seq order.
 */
export async function shownLogRecords(
  page: Page,
  expected: number,
): Promise<{ seq: number; type: string | null }[]> {
  const list = page.getByTestId("log-list");
  const loadMore = page.getByTestId("log-load-more");
  const rows = list.getByTestId("log-record");
  const seen = new Map<number, string | null>();
  let still = 0;
  while (seen.size < expected && still < 5) {
    const shown = await rows.evaluateAll((elements) =>
      elements.map((element) => ({
        seq: Number(element.getAttribute("data-seq")),
        type: element.getAttribute("data-type"),
      })),
    );
    const seqs = shown.map((row) => row.seq);
    const disorder = seqs.findIndex((seq, index) => index > 0 && seq <= seqs[index - 1]!);
    expect(disorder, `log rows out of order or repeated: ${seqs.join(",")}`).toBe(-1);
    const before = seen.size;
    for (const row of shown) seen.set(row.seq, row.type);
    const moved = await list.evaluate((element) => {
      const top = element.scrollTop;
      element.scrollTop = top + Math.max(element.clientHeight * 0.8, 200);
      return element.scrollTop !== top;
    });
    if (!moved && (await loadMore.isVisible()) && (await loadMore.isEnabled())) {
      await loadMore.click();
    }
    still = seen.size === before && !moved ? still + 1 : 0;
    await page.waitForTimeout(100);
  }
  return [...seen]
    .map(([seq, type]) => ({ seq, type }))
    .sort((a, b) => a.seq - b.seq);
}
