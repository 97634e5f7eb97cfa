// Finding a stuck run: the runs list's stuck filter shows a run whose attempts climbed while
// it never got anywhere (seeded before the server started: apps/playground/e2e/seed.py), with
// its badge, and none of the healthy runs.
import { expect, test } from "@playwright/test";

import { screenshot, seededStuckRun, startRun, waitForRun, type RunSummary } from "./support";

test("the stuck filter shows the stuck run and not the healthy ones", async ({ page, request }) => {
  const healthy = await startRun(request, "a healthy run");
  await waitForRun(request, healthy);
  const stuck = seededStuckRun();
  expect(stuck.attempt).toBe(3);
  // A healthy run that is still going: not stuck either.
  const going = await startRun(request, 'wait_a_bit {"seconds": 6}');
  await waitForRun(request, going, { statuses: ["running"] });

  const listed = (await (await request.get("/api/runs?stuck=true")).json()) as {
    items: RunSummary[];
  };
  expect(listed.items.map((run) => run.run_id)).toContain(stuck.run_id);
  expect(listed.items.map((run) => run.run_id)).not.toContain(healthy);

  await page.goto("/runs");
  const rows = page.getByTestId("run-row");
  await expect(page.locator(`[data-testid="run-row"][data-run-id="${healthy}"]`)).toBeVisible();
  await expect(page.locator(`[data-testid="run-row"][data-run-id="${going}"]`)).toBeVisible();
  await expect(page.locator('[data-testid="run-row"] [data-testid="stuck-badge"]')).toHaveCount(1);

  // The box follows the URL: ticked once the list's URL says stuck=true.
  await page.getByTestId("runs-filter-stuck").click();
  await expect(page.getByTestId("runs-filter-stuck")).toBeChecked();
  await expect(page).toHaveURL(/[?&]stuck=true/);
  const stuckRow = page.locator(`[data-testid="run-row"][data-run-id="${stuck.run_id}"]`);
  await expect(stuckRow).toBeVisible();
  await expect(rows).toHaveCount(listed.items.length);
  const badge = stuckRow.getByTestId("stuck-badge");
  await expect(badge).toBeVisible();
  await expect(badge).toHaveAttribute("title", /attempt/i);
  await expect(page.locator(`[data-testid="run-row"][data-run-id="${healthy}"]`)).toHaveCount(0);
  await expect(page.locator(`[data-testid="run-row"][data-run-id="${going}"]`)).toHaveCount(0);
  for (const row of await rows.all()) {
    await expect(row.getByTestId("stuck-badge")).toBeVisible();
  }
  await screenshot(page, "runs-stuck");

  // The filter lives in the URL: opening it again shows the same.
  await page.reload();
  await expect(page.getByTestId("runs-filter-stuck")).toBeChecked();
  await expect(stuckRow).toBeVisible();
  await expect(page.locator(`[data-testid="run-row"][data-run-id="${healthy}"]`)).toHaveCount(0);
  await waitForRun(request, going);
});
