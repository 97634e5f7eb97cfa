import { fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { TimelineData } from "../api/types";
import { TimelineChart } from "./TimelineChart";

const T0 = Date.parse("2026-03-01T10:00:00Z");
const iso = (s: number) => new Date(T0 + s * 1000).toISOString();

const DATA: TimelineData = {
  start: iso(0),
  end: iso(200),
  bars: [
    { kind: "attempt", label: "attempt 1", start: iso(0), end: iso(200), outcome: "finished", seq: 1, end_seq: 20, lane: 0 },
    { kind: "model", label: "demo", start: iso(1), end: iso(3), outcome: "finished", seq: 2, end_seq: 3, lane: 1 },
    { kind: "tool", label: "lookup_order <b>", start: iso(3), end: iso(4), outcome: "unknown", seq: 4, end_seq: 5, lane: 2 },
    { kind: "model", label: "demo", start: iso(190), end: iso(195), outcome: "finished", seq: 8, end_seq: 9, lane: 1 },
  ],
  marks: [
    { kind: "crash", at: iso(4), seq: 5, label: "worker lost its lease" },
    { kind: "unknown", at: iso(4), seq: 6, label: "lookup_order settled unknown" },
    { kind: "end", at: iso(200), seq: 20, label: "completed" },
  ],
  gaps: [{ start: iso(5), end: iso(190), seconds: 185 }],
};

describe("TimelineChart", () => {
  it("draws bars, a compressed gap and the marks", () => {
    render(<TimelineChart data={DATA} />);
    expect(screen.getByTestId("timeline").tagName.toLowerCase()).toBe("svg");
    const bars = screen.getAllByTestId("timeline-bar");
    expect(bars.map((b) => [b.dataset.kind, b.dataset.outcome, b.dataset.seq])).toEqual([
      ["attempt", "finished", "1"],
      ["model", "finished", "2"],
      ["model", "finished", "8"],
      ["tool", "unknown", "4"],
    ]);
    expect(screen.getByTestId("timeline-gap").textContent).toBe("idle 3m 05s");
    expect(screen.getAllByTestId("timeline-mark").map((m) => m.dataset.kind)).toEqual(["crash", "unknown", "end"]);
  });

  it("zooms in and out with the buttons and back with reset", () => {
    render(<TimelineChart data={DATA} />);
    const range = screen.getByTestId("timeline-range");
    const full = range.textContent;
    expect(full).toBe("+0ms – +3m 20s of +3m 20s");
    fireEvent.click(screen.getByTestId("timeline-zoom-in"));
    expect(range.textContent).not.toBe(full);
    fireEvent.click(screen.getByTestId("timeline-zoom-in"));
    fireEvent.click(screen.getByTestId("timeline-zoom-in"));
    // Zoomed to the middle eighth of the active time: the first model call is out of view.
    expect(screen.getAllByTestId("timeline-bar").some((b) => b.dataset.seq === "2")).toBe(false);
    fireEvent.click(screen.getByTestId("timeline-zoom-out"));
    fireEvent.click(screen.getByTestId("timeline-zoom-reset"));
    expect(range.textContent).toBe(full);
    expect(screen.getAllByTestId("timeline-bar")).toHaveLength(4);
  });
});
