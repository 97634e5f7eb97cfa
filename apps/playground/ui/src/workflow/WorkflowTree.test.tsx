import { fireEvent, render, screen } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import { describe, expect, it, vi } from "vitest";
import type { StepView, WorkflowView } from "../api/types";
import { WorkflowTree } from "./WorkflowTree";

const step = (key: string, status: string, extra: Partial<StepView> = {}): StepView => ({
  key,
  name: key.split(".").pop()!,
  kind: "tool",
  status,
  attempts: 1,
  steps: [],
  items: [],
  tries: [],
  ...extra,
});

const VIEW: WorkflowView = {
  run_id: "w1",
  workflow: "order_check",
  spec_version: "sha256:abc",
  status: "completed",
  steps: [
    step("lookup", "completed"),
    step("fan", "completed", { kind: "parallel", steps: [step("a", "completed", { branch: "left" }), step("b", "failed", { failure: { kind: "error", error: "step b: boom", step: "b" } })] }),
    step("confirm", "waiting", { kind: "human", input: { question: "Refund this order?" }, tries: [{ key: "confirm", name: "confirm", attempt: 1, outcome: "waiting", call_id: "confirm" }] }),
  ],
};

describe("WorkflowTree", () => {
  it("shows every step in its place with its status, and replays from the one clicked", () => {
    const onReplay = vi.fn();
    render(
      <MemoryRouter>
        <WorkflowTree view={VIEW} canReplay onReplay={onReplay} />
      </MemoryRouter>,
    );
    const steps = screen.getAllByTestId("workflow-step");
    expect(steps.map((s) => [s.dataset.step, s.dataset.status])).toEqual([
      ["lookup", "completed"],
      ["fan", "completed"],
      ["a", "completed"],
      ["b", "failed"],
      ["confirm", "waiting"],
    ]);
    expect(steps[3]!.textContent).toContain("error: step b: boom");
    const replay = steps[1]!.querySelector('[data-testid="replay-button"]')!;
    fireEvent.click(replay);
    expect(onReplay).toHaveBeenCalledWith("fan");
    // A waiting human step asks its question here.
    expect(screen.getByTestId("question-card").dataset.callId).toBe("confirm");
    expect(screen.getByTestId("question-text").textContent).toBe("Refund this order?");
  });

  it("offers no replay while the run goes on", () => {
    render(
      <MemoryRouter>
        <WorkflowTree view={{ ...VIEW, status: "running" }} canReplay={false} onReplay={() => {}} />
      </MemoryRouter>,
    );
    expect(screen.getAllByTestId<HTMLButtonElement>("replay-button").every((b) => b.disabled)).toBe(true);
  });
});
