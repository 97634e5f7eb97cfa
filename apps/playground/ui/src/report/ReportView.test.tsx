import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { Report, Totals } from "../api/types";
import { ReportView } from "./ReportView";

const totals = (cost: Totals["cost"], unpriced: number): Totals => ({
  usage: { input: 1200, output: 34, cache_read: 0, cache_write: 0, cache_write_1h: 0, reasoning: 5 },
  usage_sources: { estimated: 2 },
  cost,
  unpriced_calls: unpriced,
  failed_calls: 0,
});

function report(cost: Totals["cost"], unpriced: number): Report {
  return {
    run_id: "r1",
    agent: "support",
    spec_version: "sha256:abc",
    status: "completed",
    turns: 2,
    model_calls: 2,
    tool_calls: [
      { call_id: "1.0", name: "lookup_order", arguments: { order_id: "B7" }, outcome: "succeeded", result: { status: "shipped" } },
      {
        call_id: "3.0",
        name: "refund",
        arguments: { amount: 250 },
        outcome: "failed",
        error: "denied: not this order",
        reason: "denied",
        approval_rule: "amount gt 100",
        approved: false,
        decided_by: "e2e",
      },
    ],
    totals: totals(cost, unpriced),
    own_totals: totals(cost, unpriced),
    attempts: 1,
    started_at: "2026-03-01T10:00:00Z",
    ended_at: "2026-03-01T10:02:05Z",
  };
}

describe("ReportView", () => {
  it("says the cost is unknown when it is null, never 0, and counts the unpriced calls", () => {
    render(<ReportView report={report(null, 2)} />);
    const cost = screen.getByTestId("report-cost");
    expect(cost.textContent).toBe("unknown");
    expect(cost.textContent).not.toMatch(/0/);
    expect(screen.getByTestId("report-unpriced").textContent).toContain("2 unpriced model calls");
  });

  it("shows a cost of 0 with the source that said it", () => {
    render(<ReportView report={report({ amount: "0", currency: "USD", source: "provider" }, 0)} />);
    expect(screen.getByTestId("report-cost").textContent).toBe("0 USD · reported by the provider");
  });

  it("shows usage by kind, the timings and each tool call with its outcome", () => {
    render(<ReportView report={report(null, 2)} />);
    const usage = screen.getByTestId("report-usage");
    const input = within(usage).getByText("input").closest("tr")!;
    expect(input.textContent).toContain("1,200");
    expect(within(usage).getByText("reasoning").closest("tr")!.textContent).toContain("5");
    const timings = screen.getByTestId("report-timings").textContent;
    expect(timings).toContain("2m 05s");
    expect(timings).toMatch(/attempts\s*1/);
    const calls = screen.getAllByTestId("report-tool-call");
    expect(calls.map((c) => c.dataset.outcome)).toEqual(["succeeded", "failed"]);
    expect(calls[0]!.textContent).toContain("shipped");
    expect(calls[1]!.textContent).toContain("denied by e2e");
  });
});
