import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeFetch } from "../test/fakes";
import { SpecEditor } from "./SpecEditor";

const SPEC = {
  name: "support",
  model: { model: "demo" },
  tools: [
    { kind: "code", name: "lookup_order" },
    { kind: "code", name: "refund" },
  ],
};
const TEXT = JSON.stringify(SPEC, null, 2);
// The line of `"name": "lookup_order"`, the first tool's name.
const NAME_LINE = TEXT.split("\n").findIndex((line) => line.includes('"lookup_order"')) + 1;

afterEach(() => vi.unstubAllGlobals());

describe("SpecEditor", () => {
  it("places the server's field errors beside the line of their key", async () => {
    const calls = fakeFetch((url, init) =>
      url.pathname === "/api/agents" && init?.method === "POST"
        ? {
            status: 422,
            body: {
              detail: [
                { loc: ["tools", 0, "code", "name"], msg: "a tool name must not be used twice", type: "value_error" },
                { loc: [], msg: "the spec is wrong as a whole", type: "spec_error" },
              ],
            },
          }
        : undefined,
    );
    render(<SpecEditor initialKind="agent" initialText={TEXT} />);
    fireEvent.click(screen.getByTestId("publish-button"));
    await waitFor(() => expect(screen.getAllByTestId("field-error")).toHaveLength(2));
    const sent = calls.find((c) => c.init?.method === "POST")!;
    expect(JSON.parse(sent.init!.body as string)).toEqual({ kind: "agent", spec: SPEC });

    const errors = screen.getAllByTestId("field-error");
    const nameError = errors.find((e) => e.dataset.path === "tools/0/name");
    const whole = errors.find((e) => e.dataset.path === "");
    expect(whole!.dataset.path).toBe("");
    expect(whole!.dataset.line).toBe("");
    expect(nameError!.dataset.path).toBe("tools/0/name");
    expect(nameError!.dataset.line).toBe(String(NAME_LINE));
    expect(nameError!.textContent).toContain("a tool name must not be used twice");
    expect(nameError!.closest(".line-errors")).not.toBeNull();
    expect(whole!.closest(".line-errors")).toBeNull();

    // Editing the text clears the server's errors: they were about the text that was sent.
    fireEvent.change(screen.getByTestId("spec-editor"), { target: { value: TEXT.replace("refund", "refunds") } });
    expect(screen.queryAllByTestId("field-error")).toHaveLength(0);
  });

  it("shows a text that does not parse, and does not publish it", () => {
    const calls = fakeFetch();
    render(<SpecEditor initialKind="agent" initialText={TEXT} />);
    fireEvent.change(screen.getByTestId("spec-editor"), { target: { value: '{\n  "name": "x",,\n}' } });
    expect(screen.getByTestId("json-error").textContent).toMatch(/line 2, column 15: expected a key/);
    expect(screen.getByTestId<HTMLButtonElement>("publish-button").disabled).toBe(true);
    expect(calls.some((c) => c.init?.method === "POST")).toBe(false);
  });

  it("says which version was published and whether it was new", async () => {
    fakeFetch((url, init) =>
      url.pathname === "/api/agents" && init?.method === "POST"
        ? { status: 200, body: { name: "support", kind: "agent", version: "sha256:0123abcd", published_at: "2026-03-01T10:00:00Z", created: false } }
        : undefined,
    );
    render(<SpecEditor initialKind="agent" initialText={TEXT} />);
    fireEvent.click(screen.getByTestId("publish-button"));
    const result = await screen.findByTestId("publish-result");
    expect(result.dataset.created).toBe("false");
    expect(result.textContent).toContain("sha256:0123abcd");
    expect(result.textContent).toContain("Already published");
  });
});
