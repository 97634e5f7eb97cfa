// Big runs stay quick: a log of thousands of records opens in under a second (it is paged), and
// the timeline of a thousand steps draws a bounded number of bars and keeps the page responsive.
import { expect, test, type Page } from "@playwright/test";

import { getRun, getTimeline, readLog, startRun, waitForRun } from "./support";

/** Both runs go through the real worker and the demo model (three records a tool step). */
const STEPS = 1000;
const LONG_LOG_STEPS = 1700;
const MIN_RECORDS = 5000;
/** The most `timeline-bar` elements a thousand steps may draw at once. */
const MAX_DRAWN_BARS = 1000;
/** A frame that takes longer than this is a freeze. */
const MAX_FRAME_MS = 250;
const MAX_LONG_TASK_MS = 1000;
/** The longest a click may wait for the page to answer it. */
const MAX_ANSWER_MS = 500;

let longLog = "";
let lastSeq = -1;
let manySteps = "";

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ request }) => {
  test.setTimeout(300_000);
  longLog = await startRun(request, `repeat ${LONG_LOG_STEPS} lookup_order`);
  manySteps = await startRun(request, `repeat ${STEPS} lookup_order`);
  const detail = await waitForRun(request, longLog, { timeout: 240_000 });
  expect(detail.summary.status, `run ${longLog}`).toBe("completed");
  lastSeq = detail.status.last_seq;
  expect(lastSeq + 1, `run ${longLog} has at least ${MIN_RECORDS} records`).toBeGreaterThanOrEqual(
    MIN_RECORDS,
  );
  const steps = await waitForRun(request, manySteps, { timeout: 240_000 });
  expect(steps.summary.status, `run ${manySteps}`).toBe("completed");
  expect(steps.status.tool_calls).toBe(STEPS);
});

/** Milliseconds from one requestAnimationFrame to the next but one, in the page. */
async function frameRoundTrip(page: Page): Promise<number> {
  return page.evaluate(
    () =>
      new Promise<number>((resolve) => {
        const start = performance.now();
        requestAnimationFrame(() =>
          requestAnimationFrame(() => resolve(performance.now() - start)),
        );
      }),
  );
}

/** Record, from the page's first script on, the long tasks and when test ids first appear. */
async function watchPage(page: Page, countText: string): Promise<void> {
  await page.addInitScript((expectedCount: string) => {
    const state = { longTasks: [] as number[], seen: {} as Record<string, number> };
    (window as unknown as { psychE2e: typeof state }).psychE2e = state;
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) state.longTasks.push(entry.duration);
    }).observe({ type: "longtask", buffered: true });
    const check = (): void => {
      const at = performance.now();
      if (state.seen.record === undefined && document.querySelector('[data-testid="log-record"]')) {
        state.seen.record = at;
      }
      const count = document.querySelector('[data-testid="log-count"]');
      if (state.seen.count === undefined && count?.textContent?.trim() === expectedCount) {
        state.seen.count = at;
      }
      if (state.seen.bar === undefined && document.querySelector('[data-testid="timeline-bar"]')) {
        state.seen.bar = at;
      }
    };
    new MutationObserver(check).observe(document, {
      childList: true,
      subtree: true,
      characterData: true,
    });
  }, countText);
}

interface Watched {
  longTasks: number[];
  seen: { record?: number; count?: number; bar?: number };
}

const watched = (page: Page): Promise<Watched> =>
  page.evaluate(() => (window as unknown as { psychE2e: Watched }).psychE2e);

test("a run of thousands of records opens its log in under a second", async ({
  page,
  request,
}) => {
  const log = await readLog(request, longLog);
  expect(log.records.map((record) => record.seq)).toEqual(
    Array.from({ length: lastSeq + 1 }, (_, seq) => seq),
  );
  const countText = `${lastSeq + 1} records`;
  await page.goto("/runs"); // the server and the bundle warmed up once
  await watchPage(page, countText);

  const started = Date.now();
  await page.goto(`/runs/${longLog}?tab=log`);
  const records = page.getByTestId("log-record");
  await expect(records.first()).toBeVisible();
  await expect(page.getByTestId("log-count")).toHaveText(countText);
  const wall = Date.now() - started;
  const { seen } = await watched(page);
  expect(seen.record, "ms from navigation to the first record").toBeLessThan(1000);
  expect(seen.count, "ms from navigation to the record count").toBeLessThan(1000);
  expect(wall, "ms from goto to both, seen from the test").toBeLessThan(2000);
  console.log(
    `log of ${lastSeq + 1} records: first record ${Math.round(seen.record ?? -1)} ms and ` +
      `count ${Math.round(seen.count ?? -1)} ms after navigation, ${wall} ms seen from the test`,
  );

  // Paged: a page of records, not thousands of rows.
  await expect(records.first()).toHaveAttribute("data-seq", "0");
  const drawn = await records.count();
  expect(drawn).toBeGreaterThan(0);
  expect(drawn).toBeLessThanOrEqual(400);

  // Further records come as the list is scrolled (or on "load more"), still not all at once.
  const list = page.getByTestId("log-list");
  await expect
    .poll(
      async () => {
        await list.evaluate((element) => {
          element.scrollTop = element.scrollHeight;
          window.scrollTo(0, document.body.scrollHeight);
        });
        const more = page.getByTestId("log-load-more");
        if ((await more.isVisible()) && (await more.isEnabled())) await more.click();
        return records.evaluateAll((elements) =>
          Math.max(...elements.map((element) => Number(element.getAttribute("data-seq")))),
        );
      },
      { message: "records after the first page come on scrolling", timeout: 10_000 },
    )
    .toBeGreaterThanOrEqual(200);
  expect(await records.count()).toBeLessThan(1000);
  expect(await frameRoundTrip(page)).toBeLessThan(MAX_FRAME_MS);
});

test("the timeline of a thousand steps draws without freezing the page", async ({
  page,
  request,
}) => {
  const timeline = await getTimeline(request, manySteps);
  const toolBars = timeline.bars.filter((bar) => bar.kind === "tool");
  expect(toolBars).toHaveLength(STEPS);
  await page.goto("/runs");
  await watchPage(page, "");

  await page.goto(`/runs/${manySteps}`);
  await expect(page.getByTestId("timeline")).toBeVisible();
  const bars = page.getByTestId("timeline-bar");
  await expect(bars.first()).toBeVisible();
  const { seen } = await watched(page);
  expect(seen.bar, "ms from navigation to the first bar").toBeLessThan(3000);

  const drawn = await bars.count();
  expect(drawn, `bars drawn for ${timeline.bars.length} in the run`).toBeLessThanOrEqual(
    MAX_DRAWN_BARS,
  );
  expect(await frameRoundTrip(page)).toBeLessThan(MAX_FRAME_MS);

  // Zoomed in, it answers at once and draws a bounded number of bars.
  const range = page.getByTestId("timeline-range");
  const before = await range.textContent();
  const zoomed = Date.now();
  await page.getByTestId("timeline-zoom-in").click();
  await expect(range).not.toHaveText(before ?? "");
  const zoomMs = Date.now() - zoomed;
  expect(zoomMs, "ms from a click on zoom-in to the new range").toBeLessThan(MAX_ANSWER_MS);
  expect(await bars.count()).toBeLessThanOrEqual(MAX_DRAWN_BARS);
  expect(await frameRoundTrip(page)).toBeLessThan(MAX_FRAME_MS);
  await page.getByTestId("timeline-zoom-reset").click();
  await expect(range).toHaveText(before ?? "");

  // A click on another tab is answered at once (its thousand tool calls load after).
  const clicked = Date.now();
  await page.getByTestId("tab-report").click();
  await expect(page.getByTestId("tab-report")).toHaveAttribute("aria-selected", "true");
  const tabMs = Date.now() - clicked;
  expect(tabMs, "ms from a click on the report tab to the tab shown").toBeLessThan(MAX_ANSWER_MS);
  await expect(page.getByTestId("report-tool-call")).toHaveCount(STEPS);
  const reportMs = Date.now() - clicked;
  console.log(
    `timeline of ${STEPS} steps: first bar ${Math.round(seen.bar ?? -1)} ms, ${drawn} of ` +
      `${timeline.bars.length} bars drawn, zoom answered in ${zoomMs} ms, tab in ${tabMs} ms, ` +
      `report of ${STEPS} calls in ${reportMs} ms`,
  );

  const { longTasks } = await watched(page);
  expect(Math.max(0, ...longTasks), "the longest task while drawing (ms)").toBeLessThan(
    MAX_LONG_TASK_MS,
  );
  expect((await getRun(request, manySteps)).summary.status).toBe("completed");
});
