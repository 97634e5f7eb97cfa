import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { DiffView } from "./DiffView";

describe("DiffView", () => {
  it("shows one row per change with its path, op, and the values before and after", () => {
    render(
      <DiffView
        changes={[
          { path: "instructions", op: "changed", before: "Help.", after: "Help. Be brief." },
          { path: "tools/2", op: "added", before: null, after: { kind: "code", name: "fetch_page" } },
          { path: "max_turns", op: "removed", before: 10, after: null },
        ]}
      />,
    );
    const rows = screen.getAllByTestId("diff-change");
    expect(rows.map((r) => [r.dataset.path, r.dataset.op])).toEqual([
      ["instructions", "changed"],
      ["tools/2", "added"],
      ["max_turns", "removed"],
    ]);
    const [changed, added, removed] = rows as [HTMLElement, HTMLElement, HTMLElement];
    expect(changed.textContent).toContain("Help.");
    expect(changed.textContent).toContain("Help. Be brief.");
    expect(added.textContent).toContain('"name": "fetch_page"');
    expect(added.textContent).toContain("+");
    expect(removed.textContent).toContain("10");
    expect(removed.textContent).toContain("−");
  });

  it("shows a hostile value as inert text", () => {
    const { container } = render(
      <DiffView changes={[{ path: "instructions", op: "changed", before: "ok", after: "<img src=x onerror=alert(1)>\u202e" }]} />,
    );
    expect(container.querySelector("img")).toBeNull();
    expect(screen.getByTestId("diff-change").textContent).toContain("<img src=x onerror=alert(1)>\\u202e");
  });

  it("says when the versions are the same", () => {
    render(<DiffView changes={[]} />);
    expect(screen.queryAllByTestId("diff-change")).toHaveLength(0);
    expect(screen.getByText("The two versions are the same.")).toBeTruthy();
  });
});
