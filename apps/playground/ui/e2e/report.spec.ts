// A run's report: usage by kind, a cost that is unknown (the demo model has no price) rather
// than zero, its timings, and each tool call with how it ended.
import { expect, test, type APIRequestContext, type Page } from "@playwright/test";

import { getReport, getRun, screenshot, startRun, waitForRun, type Report } from "./support";

async function deniedRefund(request: APIRequestContext): Promise<string> {
  const runId = await startRun(request, 'refund {"order_id": "C3", "amount": 250}');
  const { status } = await waitForRun(request, runId, { statuses: ["waiting"] });
  expect(status.waiting_for).toHaveLength(1);
  const response = await request.post(`/api/runs/${runId}/approvals/${status.waiting_for[0]}`, {
    data: { approve: false, by: "e2e", note: "not this order" },
  });
  expect(response.status(), await response.text()).toBe(202);
  await waitForRun(request, runId);
  return runId;
}

async function openReport(
  page: Page,
  request: APIRequestContext,
  runId: string,
): Promise<Report> {
  const report = await getReport(request, runId);
  await page.goto(`/runs/${runId}?tab=report`);
  await expect(page.getByTestId("report")).toBeVisible();
  await expect(page.getByTestId("run-status")).toHaveText(report.status);
  return report;
}

test("the report: usage, an unknown cost, timings and tool calls", async ({ page, request }) => {
  const runId = await startRun(request, 'lookup_order {"order_id": "B7"}');
  await waitForRun(request, runId);
  const report = await openReport(page, request, runId);
  expect(report.status).toBe("completed");
  expect(report.model_calls).toBe(2);

  // Usage: a row for each kind the model reported, with its count.
  const usage = page.getByTestId("report-usage");
  await expect(usage).toBeVisible();
  for (const [kind, count] of Object.entries(report.totals.usage) as [string, number][]) {
    if (count === 0) continue;
    const row = usage.locator("tr, li, [role=row]").filter({ hasText: kind });
    await expect(row.first(), `the usage row of ${kind}`).toContainText(count.toLocaleString("en"));
  }

  // The demo model has no price: the cost is unknown, never zero.
  expect(report.totals.cost).toBeNull();
  const cost = page.getByTestId("report-cost");
  await expect(cost).toContainText(/unknown/i);
  await expect(cost).not.toContainText(/\$\s*0|0\.00/);
  await expect(page.getByTestId("report-unpriced")).toContainText(
    String(report.totals.unpriced_calls),
  );
  expect(report.totals.unpriced_calls).toBe(report.model_calls);

  // Timings: when it started and ended, how long, how many attempts.
  const timings = page.getByTestId("report-timings");
  await expect(timings).toContainText(/start/i);
  await expect(timings).toContainText(/end/i);
  await expect(timings).toContainText(/duration/i);
  await expect(timings).toContainText(/attempt/i);
  await expect(timings).toContainText(String(report.attempts));

  // The tool call, and how it ended.
  const calls = page.getByTestId("report-tool-call");
  await expect(calls).toHaveCount(report.tool_calls.length);
  await expect(calls).toHaveCount(1);
  await expect(calls.first()).toContainText("lookup_order");
  await expect(calls.first()).toHaveAttribute("data-outcome", "succeeded");
  await screenshot(page, "run-report");

  // A call a person denied is reported as failed, with the reason.
  const denied = await deniedRefund(request);
  const deniedReport = await openReport(page, request, denied);
  const [refund] = deniedReport.tool_calls;
  expect(refund?.outcome).toBe("failed");
  const deniedCall = page.getByTestId("report-tool-call");
  await expect(deniedCall).toHaveCount(1);
  await expect(deniedCall.first()).toContainText("refund");
  await expect(deniedCall.first()).toHaveAttribute("data-outcome", "failed");
  await expect(deniedCall.first()).toContainText(/denied/i);
  expect((await getRun(request, denied)).summary.status).toBe("completed");
});
