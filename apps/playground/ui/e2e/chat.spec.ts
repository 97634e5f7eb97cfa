// Chat: the assistant's words appear while the model writes them, then its message for good, and
// a second message continues the same thread in a new run.
//
// Words cross from the worker to the server only through a live channel, which the playground
// has on PostgreSQL: this file talks to the server the config runs on PostgreSQL.
import { expect, test } from "@playwright/test";

import { getRun, liveBaseURL, SUPPORT } from "./support";

test.use({ baseURL: liveBaseURL() });

test("live words, the final answer, and a second message in the same thread", async ({
  page,
  request,
}) => {
  const health = (await (await request.get("/api/health")).json()) as {
    store: string;
    live_text: boolean;
  };
  expect(health, "the live server runs on PostgreSQL with live text").toEqual(
    expect.objectContaining({ store: "postgresql", live_text: true }),
  );

  await page.goto(`/chat/${SUPPORT}`);
  // Long enough to be seen being written (the demo model writes a word every 30 ms).
  const words = Array.from({ length: 80 }, (_, index) => `word${index}`).join(" ");
  const first = `Please repeat after me ${words}`;
  await page.getByTestId("chat-input").fill(first);
  await page.getByTestId("chat-send").click();

  const user = page.locator('[data-testid="chat-message"][data-role="user"]');
  const assistant = page.locator('[data-testid="chat-message"][data-role="assistant"]');
  await expect(user.first()).toContainText(first);

  // Some words, before all of them: the answer is being written.
  const live = page.getByTestId("live-text");
  await expect(live).toContainText("You said:");
  const partial = (await live.textContent()) ?? "";
  expect(partial.length, `live text "${partial}" is the beginning of the answer`).toBeLessThan(
    `You said: ${first}`.length,
  );
  expect(`You said: ${first}`.startsWith(partial.trim())).toBe(true);
  await expect(assistant).toHaveCount(0);

  // Then the message for good, and no provisional words left.
  await expect(assistant).toHaveCount(1);
  await expect(assistant.first()).toHaveText(`You said: ${first}`);
  await expect(live).toHaveCount(0);
  await expect(page).toHaveURL(new RegExp(`/chat/${SUPPORT}/[^/]+$`));
  const firstRun = new URL(page.url()).pathname.split("/").pop()!;
  await expect(assistant.first()).toHaveAttribute("data-run-id", firstRun);
  await expect(page.getByTestId("chat-status")).toContainText("completed");

  // A second message: a new run continuing the first, the URL following it.
  const second = "And now something shorter";
  await page.getByTestId("chat-input").fill(second);
  await page.getByTestId("chat-send").click();
  await expect(assistant).toHaveCount(2);
  await expect(assistant.nth(1)).toHaveText(`You said: ${second}`);
  await expect(page).not.toHaveURL(new RegExp(`/${firstRun}$`));
  await expect(page).toHaveURL(new RegExp(`/chat/${SUPPORT}/[^/]+$`));
  const secondRun = new URL(page.url()).pathname.split("/").pop()!;
  await expect(assistant.nth(1)).toHaveAttribute("data-run-id", secondRun);
  const detail = await getRun(request, secondRun);
  expect(detail.continues, `run ${secondRun} continues ${firstRun}`).toBe(firstRun);

  // The whole thread is on the page, in order, and stays after a reload.
  await expect(user).toHaveText([first, second]);
  await page.reload();
  await expect(user).toHaveText([first, second]);
  await expect(assistant).toHaveText([`You said: ${first}`, `You said: ${second}`]);
});
