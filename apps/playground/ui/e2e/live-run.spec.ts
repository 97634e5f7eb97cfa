// A run's page while the run goes on: the timeline grows as records arrive, and a reload in the
// middle of the run loses and repeats nothing in the log.
import { expect, test, type Page } from "@playwright/test";

import {
  getRun,
  getTimeline,
  readLog,
  screenshot,
  shownLogRecords,
  startRun,
  waitForRun,
} from "./support";

/** Steps of `wait_a_bit`, each a tool call that sleeps, so the run lasts a few seconds. */
const STEPS = 6;
const SLOW_RUN = `repeat ${STEPS} wait_a_bit {"seconds": 1}`;

/** Mark the document, to tell later that the page was not reloaded since. */
async function markDocument(page: Page): Promise<void> {
  await page.evaluate(() => {
    (window as unknown as { psychE2eMark?: boolean }).psychE2eMark = true;
  });
}

async function sameDocument(page: Page): Promise<boolean> {
  return page.evaluate(
    () => (window as unknown as { psychE2eMark?: boolean }).psychE2eMark === true,
  );
}

test("the timeline of a running run grows without a reload", async ({ page, request }) => {
  const runId = await startRun(request, SLOW_RUN);
  await page.goto(`/runs/${runId}`);
  await markDocument(page);
  await expect(page.getByTestId("timeline")).toBeVisible();
  await expect(page.getByTestId("run-live")).toBeVisible();
  const bars = page.getByTestId("timeline-bar");
  const toolBars = page.locator('[data-testid="timeline-bar"][data-kind="tool"]');
  await expect(bars.first()).toBeVisible();
  const first = await toolBars.count();
  expect(first, "the page opened before most steps had run").toBeLessThan(STEPS - 1);
  expect((await getRun(request, runId)).summary.status).not.toBe("completed");

  // Step by step, the bars come while the page stays the same document.
  await expect.poll(() => toolBars.count(), { timeout: 30_000 }).toBeGreaterThan(first);
  const later = await toolBars.count();
  await expect.poll(() => toolBars.count(), { timeout: 30_000 }).toBeGreaterThan(later);
  await expect(page.getByTestId("run-status")).toHaveText("completed", { timeout: 60_000 });
  await expect(toolBars).toHaveCount(STEPS);
  expect(await sameDocument(page), "the page was not reloaded").toBe(true);
  // The timeline tab refreshes at most once a second, the status twice: the bars may catch up
  // with the log a moment after the status reads "completed", and then must equal it exactly.
  const recorded = (await getTimeline(request, runId)).bars
    .filter((bar) => bar.kind === "tool")
    .map((bar) => [String(bar.seq), bar.outcome]);
  expect(recorded.map((bar) => bar[1])).toEqual(Array(STEPS).fill("finished"));
  const bySeq = (a: (string | null)[], b: (string | null)[]): number => Number(a[0]) - Number(b[0]);
  const drawn = async (): Promise<(string | null)[][]> =>
    (
      await toolBars.evaluateAll((elements) =>
        elements.map((element) => [
          element.getAttribute("data-seq"),
          element.getAttribute("data-outcome"),
        ]),
      )
    ).sort(bySeq);
  await expect.poll(drawn, { timeout: 10_000 }).toEqual(recorded.sort(bySeq));
  await expect(page.locator('[data-testid="timeline-mark"][data-kind="end"]')).toHaveCount(1);
  await expect(page.getByTestId("run-live")).toHaveCount(0);
  await screenshot(page, "run-timeline");
});

test("a reload in the middle of a run: every record once, none missing", async ({
  page,
  request,
}) => {
  const runId = await startRun(request, SLOW_RUN);
  await page.goto(`/runs/${runId}?tab=log`);
  const records = page.getByTestId("log-record");
  await expect(records.first()).toBeVisible();
  // Some of the run's records are in, more are to come.
  await expect.poll(() => records.count()).toBeGreaterThan(3);
  expect(["queued", "running", "waiting"]).toContain((await getRun(request, runId)).summary.status);

  await page.reload();
  await markDocument(page);
  await expect(records.first()).toBeVisible();
  expect(["queued", "running", "waiting"], "the run was still going at the reload").toContain(
    (await getRun(request, runId)).summary.status,
  );
  await expect(page.getByTestId("run-status")).toHaveText("completed", { timeout: 60_000 });
  await waitForRun(request, runId);

  // What the page holds, against what the API says the log is.
  const log = await readLog(request, runId);
  const all = Array.from({ length: log.last_seq + 1 }, (_, seq) => seq);
  expect(log.records.map((record) => record.seq)).toEqual(all);
  await expect(page.getByTestId("log-count")).toHaveText(`${log.last_seq + 1} records`);
  const shown = await shownLogRecords(page, all.length);
  expect(shown.map((record) => record.seq)).toEqual(all);
  expect(shown.map((record) => record.type)).toEqual(log.records.map((record) => record.body.type));
  expect(await sameDocument(page), "the page followed the run to its end without a reload").toBe(
    true,
  );
});
