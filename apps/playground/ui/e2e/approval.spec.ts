// Approving a tool call from the chat, with edited arguments: the tool runs with what the person
// approved, and the run completes.
import { expect, test } from "@playwright/test";

import { getReport, readLog, screenshot, SUPPORT, waitForRun } from "./support";

test("a refund over the limit waits for approval; approved with a smaller amount", async ({
  page,
  request,
}) => {
  await page.goto(`/chat/${SUPPORT}`);
  await page.getByTestId("chat-input").fill('refund {"order_id": "A1", "amount": 500}');
  await page.getByTestId("chat-send").click();

  const card = page.getByTestId("approval-card");
  await expect(card).toBeVisible();
  await expect(card.getByTestId("approval-tool")).toHaveText("refund");
  const asked = JSON.parse(
    (await card.getByTestId("approval-arguments").textContent()) ?? "",
  ) as unknown;
  expect(asked).toEqual({ order_id: "A1", amount: 500 });
  await expect(page).toHaveURL(new RegExp(`/chat/${SUPPORT}/[^/]+$`));
  const runId = new URL(page.url()).pathname.split("/").pop()!;
  const callId = await card.getAttribute("data-call-id");
  expect(callId, "the approval card names the call").toBeTruthy();
  await expect(page.getByTestId("chat-status")).toContainText("waiting");
  await screenshot(page, "chat-approval");

  const edit = card.getByTestId("edit-arguments");
  await expect(edit).toBeVisible();
  await edit.fill(JSON.stringify({ order_id: "A1", amount: 400 }, null, 2));
  await card.getByTestId("approve-edited-button").click();

  await expect(page.getByTestId("approval-card")).toHaveCount(0);
  await expect(page.getByTestId("chat-status")).toContainText("completed");
  const assistant = page.locator('[data-testid="chat-message"][data-role="assistant"]');
  await expect(assistant.last()).toContainText("refund returned");
  await expect(assistant.last()).toContainText(/"refunded":\s*400(\.0)?\b/);
  await expect(page.getByText(/"refunded":\s*500/)).toHaveCount(0);

  // What the run recorded: the call ran once, with the approved arguments.
  await waitForRun(request, runId);
  const report = await getReport(request, runId);
  expect(report.status).toBe("completed");
  const refunds = report.tool_calls.filter((call) => call.name === "refund");
  expect(refunds).toHaveLength(1);
  const [refund] = refunds;
  expect(refund?.call_id).toBe(callId);
  expect(refund?.outcome).toBe("succeeded");
  expect(refund?.edited_arguments).toEqual({ order_id: "A1", amount: 400 });
  expect(refund?.result).toEqual(expect.objectContaining({ order_id: "A1", refunded: 400 }));
  const log = await readLog(request, runId);
  expect(log.records.map((record) => record.seq)).toEqual(
    Array.from({ length: log.last_seq + 1 }, (_, seq) => seq),
  );
});
