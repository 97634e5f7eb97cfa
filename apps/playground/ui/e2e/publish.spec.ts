// Publishing agent versions from the editor: a bad field is pointed at, a good spec becomes a new
// version in the history, and the diff between two versions shows what changed.
import { expect, test } from "@playwright/test";

import { getAgent, screenshot, versionPrefix } from "./support";

interface Spec extends Record<string, unknown> {
  name: string;
  instructions?: string;
  tools: ({ name: string } & Record<string, unknown>)[];
}

test("a field error, then a new version in the history and its diff", async ({
  page,
  request,
}) => {
  const name = `e2e-publish-${Date.now().toString(36)}`;
  const examples = (await (await request.get("/api/agents/examples")).json()) as {
    agent: Spec;
  };
  const first: Spec = { ...examples.agent, name };
  expect(first.tools.length, "the example agent has tools").toBeGreaterThan(0);

  // A first version, from /agents/new.
  await page.goto("/agents/new");
  await page.getByTestId("spec-kind").selectOption("agent");
  await page.getByTestId("spec-editor").fill(JSON.stringify(first, null, 2));
  await page.getByTestId("publish-button").click();
  await expect(page.getByTestId("publish-result")).toBeVisible();
  const v1 = (await getAgent(request, name)).versions;
  expect(v1).toHaveLength(1);
  const firstVersion = v1[0]!.version;
  await expect(page.getByTestId("publish-result")).toContainText(versionPrefix(firstVersion));

  // The agent's page: its history, and an editor holding the latest version.
  await page.goto(`/agents/${name}`);
  await expect(page.getByTestId("version-row")).toHaveCount(1);
  const editor = page.getByTestId("spec-editor");
  await expect(editor).not.toHaveValue("");
  const latest = JSON.parse(await editor.inputValue()) as Spec;
  expect(latest.name).toBe(name);
  expect(latest.tools.map((tool) => tool.name)).toEqual(first.tools.map((tool) => tool.name));

  // A tool with an empty name: refused, and the error names the field.
  const toolName = latest.tools[0]!.name;
  latest.tools[0]!.name = "";
  await editor.fill(JSON.stringify(latest, null, 2));
  await page.getByTestId("publish-button").click();
  const fieldError = page.locator('[data-testid="field-error"][data-path="tools/0/name"]');
  await expect(fieldError).toBeVisible();
  await expect(fieldError).toContainText(/name/i);
  expect((await getAgent(request, name)).versions, "a refused spec publishes nothing").toHaveLength(
    1,
  );

  // Fixed, and changed: a second version.
  latest.tools[0]!.name = toolName;
  const added = "Answer in one short paragraph.";
  latest.instructions = `${latest.instructions ?? ""} ${added}`.trim();
  await editor.fill(JSON.stringify(latest, null, 2));
  await page.getByTestId("publish-button").click();
  await expect(page.getByTestId("field-error")).toHaveCount(0);
  await expect(page.getByTestId("publish-result")).toBeVisible();
  const versions = (await getAgent(request, name)).versions;
  expect(versions).toHaveLength(2);
  const secondVersion = versions[0]!.version;
  expect(versions[1]!.version).toBe(firstVersion);
  await expect(page.getByTestId("publish-result")).toContainText(versionPrefix(secondVersion));

  // The history shows both, and the diff of the two shows the one change.
  await expect(page.getByTestId("version-row")).toHaveCount(2);
  await expect(page.locator(`[data-testid="version-row"][data-version="${secondVersion}"]`))
    .toBeVisible();
  await expect(page.locator(`[data-testid="version-row"][data-version="${firstVersion}"]`))
    .toBeVisible();
  await page.getByTestId("diff-from").selectOption(firstVersion);
  await page.getByTestId("diff-to").selectOption(secondVersion);
  const diff = (await (
    await request.get(`/api/agents/${name}/diff?from=${firstVersion}&to=${secondVersion}`)
  ).json()) as { changes: { path: string; op: string }[] };
  expect(diff.changes).toEqual([expect.objectContaining({ path: "instructions", op: "changed" })]);
  const change = page.locator('[data-testid="diff-change"][data-path="instructions"]');
  await expect(page.getByTestId("diff-change")).toHaveCount(1);
  await expect(change).toHaveAttribute("data-op", "changed");
  await expect(change).toContainText(added);
  await screenshot(page, "agent-history");

  // The catalog lists the agent with two versions.
  await page.goto("/agents");
  const row = page.locator(`[data-testid="agent-row"][data-name="${name}"]`);
  await expect(row).toBeVisible();
  await expect(row.getByTestId("chat-link")).toHaveAttribute("href", `/chat/${name}`);
  await expect(page.locator('[data-testid="agent-row"][data-name="support"]')).toBeVisible();
  await screenshot(page, "agents");
});
