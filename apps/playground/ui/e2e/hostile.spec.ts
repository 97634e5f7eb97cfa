// What a tool returns is shown as text, never run: a page full of markup, a bidi override and an
// ANSI escape, fetched by `fetch_page`, adds no element to the page and runs no code, and its
// text is shown with the control characters escaped, in the chat and in the log.
import { expect, test, type Page } from "@playwright/test";

import { getReport, SUPPORT, waitForRun } from "./support";

interface DomCensus {
  scripts: number;
  images: number;
  iframes: number;
  handlers: number;
  rawControls: boolean;
  pwned: unknown;
}

/** What the page holds that a hostile string could have added. */
async function census(page: Page): Promise<DomCensus> {
  return page.evaluate(() => {
    const controls = new RegExp(
      "[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f" +
        "\\u202a-\\u202e\\u2066-\\u2069]",
    );
    let handlers = 0;
    for (const element of document.querySelectorAll("*")) {
      for (const attribute of element.getAttributeNames()) {
        if (attribute.toLowerCase().startsWith("on")) handlers += 1;
      }
    }
    return {
      scripts: document.querySelectorAll("script").length,
      images: document.querySelectorAll("img, svg image, object, embed").length,
      iframes: document.querySelectorAll("iframe").length,
      handlers,
      rawControls: controls.test(document.body.innerText),
      pwned: (window as unknown as { __pwned?: unknown }).__pwned,
    };
  });
}

/** Every string in a JSON value. */
function stringsIn(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (value !== null && typeof value === "object") return Object.values(value).flatMap(stringsIn);
  return [];
}

test("a hostile tool result is inert in the chat and in the log", async ({
  page,
  request,
  baseURL,
}) => {
  const origin = new URL(baseURL ?? "http://127.0.0.1").origin;
  const dialogs: string[] = [];
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  const requests: string[] = [];
  page.on("request", (sent) => {
    if (new URL(sent.url()).origin !== origin) {
      requests.push(sent.url());
    }
  });

  await page.goto(`/chat/${SUPPORT}`);
  const before = await census(page);
  expect(before.pwned).toBeUndefined();

  await page.getByTestId("chat-input").fill('fetch_page {"url": "http://x"}');
  await page.getByTestId("chat-send").click();
  const assistant = page.locator('[data-testid="chat-message"][data-role="assistant"]');
  await expect(assistant.last()).toContainText("fetch_page returned");
  await expect(page).toHaveURL(new RegExp(`/chat/${SUPPORT}/[^/]+$`));
  const runId = new URL(page.url()).pathname.split("/").pop()!;
  await waitForRun(request, runId);

  // The payload really is hostile: markup, a bidi override, an ANSI escape.
  const report = await getReport(request, runId);
  const result = report.tool_calls[0]?.result;
  const text = stringsIn(result).join("\n");
  expect(text).toContain("<script");
  expect(text).toMatch(/<img[^>]*onerror/i);
  expect(text).toContain("\u202e");
  expect(text).toContain("\u001b");

  // Shown as text: the markup itself, the controls as visible escapes.
  await expect(assistant.last()).toContainText("<script");
  await expect(assistant.last()).toContainText("\\u202e");
  await expect(assistant.last()).toContainText("\\x1b");
  await page.waitForTimeout(500); // an onerror would have fired by now
  const after = await census(page);
  expect(after).toEqual({ ...before, rawControls: false, pwned: undefined });
  expect(dialogs).toEqual([]);

  // The log tab: the tool's record shows the same text, inert.
  await page.goto(`/runs/${runId}?tab=log`);
  const bodies = page.getByTestId("log-record-body");
  const records = page.getByTestId("log-record");
  await expect(records.first()).toBeVisible();
  const withResult = records.filter({ hasText: "fetch_page" }).filter({ hasText: "<script" });
  await expect(bodies.filter({ hasText: "<script" }).first()).toBeVisible();
  await expect(bodies.filter({ hasText: "\\u202e" }).first()).toBeVisible();
  await expect(bodies.filter({ hasText: /\\x1b|\\u001b/ }).first()).toBeVisible();
  expect(await withResult.count()).toBeGreaterThan(0);
  const inLog = await census(page);
  expect(inLog.pwned).toBeUndefined();
  expect(inLog.rawControls).toBe(false);
  expect(inLog.images).toBe(before.images);
  expect(inLog.iframes).toBe(before.iframes);
  expect(inLog.handlers).toBe(before.handlers);
  expect(inLog.scripts).toBe(before.scripts);
  expect(dialogs).toEqual([]);
  expect(requests, "the page asked nothing of another origin").toEqual([]);
});
