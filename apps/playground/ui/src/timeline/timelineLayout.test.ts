import { describe, expect, it } from "vitest";
import type { TimelineBar, TimelineData } from "../api/types";
import { buildAxis, fullView, GAP_PX, makeScale, toActive, zoomView } from "./timeAxis";
import { layoutTimeline, MAX_DRAWN_BARS } from "./timelineLayout";

const T0 = Date.parse("2026-03-01T10:00:00Z");
const iso = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

function bar(kind: TimelineBar["kind"], lane: number, seq: number, from: number, to: number | null, outcome = "finished"): TimelineBar {
  return { kind, label: `${kind} ${seq}`, start: iso(from), end: to === null ? null : iso(to), outcome, seq, end_seq: seq + 1, lane };
}

/** A run of `steps` model+tool steps, 0.5 s each, with an idle stretch of `idle` seconds after
 * step `pauseAfter`. */
function run(steps: number, idle = 0, pauseAfter = -1): TimelineData {
  const bars: TimelineBar[] = [];
  let t = 0;
  let seq = 1;
  let gapStart = 0;
  for (let i = 0; i < steps; i++) {
    bars.push(bar("model", 1, seq++, t, t + 0.3));
    bars.push(bar("tool", 2, seq++, t + 0.3, t + 0.35, "succeeded"));
    t += 0.5;
    if (i === pauseAfter) {
      gapStart = t;
      t += idle;
    }
  }
  bars.unshift(bar("attempt", 0, 0, 0, t));
  return {
    start: iso(0),
    end: iso(t),
    bars,
    marks: [{ kind: "crash", at: iso(1), seq: 3, label: "worker lost" }],
    gaps: idle ? [{ start: iso(gapStart), end: iso(gapStart + idle), seconds: idle }] : [],
  };
}

describe("the time axis", () => {
  it("takes idle stretches longer than 30 s out of active time", () => {
    const data = run(10, 125, 4);
    const axis = buildAxis(data);
    expect(axis.gaps).toHaveLength(1);
    expect(axis.gaps[0]!.seconds).toBe(125);
    expect(axis.gaps[0]!.activeAt).toBeCloseTo(2.5);
    expect(axis.totalActive).toBeCloseTo(5);
    expect(toActive(axis, Date.parse(iso(2.5 + 125 + 1)))).toBeCloseTo(3.5);
    expect(toActive(axis, Date.parse(iso(60)))).toBeCloseTo(2.5); // inside the gap
  });

  it("keeps an idle stretch of 30 s or less as it is", () => {
    const data = run(10, 20, 4);
    const axis = buildAxis(data);
    expect(axis.gaps).toHaveLength(0);
    expect(axis.totalActive).toBeCloseTo(25);
  });

  it("maps pixels back to the same time", () => {
    const axis = buildAxis(run(10, 125, 4));
    const scale = makeScale(axis, fullView(axis), 800);
    for (const seconds of [0.1, 2.4, 2.5 + 125 + 0.2, 2.5 + 125 + 2.4]) {
      const ms = Date.parse(iso(seconds));
      expect(scale.invert(scale.x(ms))).toBeCloseTo(toActive(axis, ms), 6);
    }
  });
});

describe("layoutTimeline", () => {
  it("draws a compressed gap at a fixed width with how long it was", () => {
    const data = run(10, 125, 4);
    const axis = buildAxis(data);
    const layout = layoutTimeline(data, axis, fullView(axis), 800);
    expect(layout.gaps).toHaveLength(1);
    const gap = layout.gaps[0]!;
    expect(gap.width).toBe(GAP_PX);
    expect(gap.label).toBe("idle 2m 05s");
    // Five active seconds share what the gap leaves of the width.
    const perSecond = (800 - GAP_PX) / 5;
    expect(gap.x).toBeCloseTo(2.5 * perSecond);
    const afterGap = layout.bars.find((b) => b.kind === "model" && b.seq === 11)!;
    expect(afterGap.x).toBeCloseTo(gap.x + GAP_PX);
    expect(layout.bars.find((b) => b.kind === "attempt")!.width).toBeCloseTo(800);
  });

  it("draws a bounded number of bars for a thousand steps, merging the narrow ones", () => {
    const data = run(1000);
    const axis = buildAxis(data);
    const layout = layoutTimeline(data, axis, fullView(axis), 900);
    expect(layout.inView).toBe(2001);
    expect(layout.bars.length).toBeLessThanOrEqual(MAX_DRAWN_BARS);
    expect(layout.bars.length).toBeLessThan(100);
    // Every bar in view is drawn once: alone or counted in a merged bar.
    expect(layout.bars.reduce((sum, b) => sum + b.count, 0)).toBe(2001);
    const tools = layout.bars.filter((b) => b.lane === 2);
    expect(tools.every((b) => b.kind === "tool" && b.outcome === "succeeded")).toBe(true);
    expect(layout.bars.every((b) => b.width >= 1 && b.x >= 0 && b.x + b.width <= 900 + 1e-6)).toBe(true);
  });

  it("keeps the drawn count bounded even when steps are spread a few pixels apart", () => {
    const data = run(1000);
    const axis = buildAxis(data);
    // 3,000 px for 500 s: 6 px a step, each tool bar 0.6 px wide and model bar 1.8 px.
    const layout = layoutTimeline(data, axis, fullView(axis), 3000);
    expect(layout.inView).toBe(2001);
    expect(layout.bars.length).toBeLessThanOrEqual(MAX_DRAWN_BARS);
    expect(layout.bars.reduce((sum, b) => sum + b.count, 0)).toBe(2001);
  });

  it("lays out only the bars in view once zoomed in, each on its own", () => {
    const data = run(1000);
    const axis = buildAxis(data);
    const layout = layoutTimeline(data, axis, { from: 100, to: 105 }, 900);
    // Steps 200..209 (and the step that ends at 100 s, touching the edge), and the attempt.
    expect(layout.inView).toBeLessThanOrEqual(24);
    expect(layout.inView).toBeGreaterThanOrEqual(21);
    const models = layout.bars.filter((b) => b.kind === "model" && b.width > 1);
    expect(models).toHaveLength(10);
    expect(models.every((b) => b.count === 1)).toBe(true);
    expect(models.map((b) => b.seq)).toEqual(Array.from({ length: 10 }, (_, i) => 401 + 2 * i));
  });

  it("shows marks in view and drops those out of it", () => {
    const data = run(100);
    const axis = buildAxis(data);
    expect(layoutTimeline(data, axis, fullView(axis), 500).marks).toEqual([
      expect.objectContaining({ kind: "crash", seq: 3 }),
    ]);
    expect(layoutTimeline(data, axis, { from: 10, to: 20 }, 500).marks).toHaveLength(0);
  });

  it("draws the mark of the run's end at the right edge, whatever the rounding", () => {
    for (let end = 1; end < 9; end += 0.007) {
      const data = run(1);
      data.end = iso(end);
      data.marks = [{ kind: "end", at: iso(end), seq: 9, label: "completed" }];
      const axis = buildAxis(data);
      for (const width of [900, 948, 1003, 1200]) {
        const marks = layoutTimeline(data, axis, fullView(axis), width).marks;
        const drawn = `a run of ${end} s drawn ${width} px wide`;
        expect(marks.map((mark) => mark.kind), drawn).toEqual(["end"]);
        expect(marks[0]?.x, drawn).toBeCloseTo(width, 6);
      }
    }
  });

  it("zooms around the middle, within the run", () => {
    const axis = buildAxis(run(100)); // 50 s
    const full = fullView(axis);
    expect(zoomView(axis, full, 0.5)).toEqual({ from: 12.5, to: 37.5 });
    expect(zoomView(axis, { from: 0, to: 10 }, 4)).toEqual({ from: 0, to: 40 });
    expect(zoomView(axis, { from: 40, to: 50 }, 0.5)).toEqual({ from: 42.5, to: 47.5 });
    expect(zoomView(axis, full, 8)).toEqual(full);
  });
});
