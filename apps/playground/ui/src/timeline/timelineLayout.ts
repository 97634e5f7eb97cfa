// What the timeline draws for a view: bars, compressed gaps, marks and ticks, in pixels.
//
// Only what is in view is laid out, and bars narrower than a pixel that touch are merged into
// one drawn bar that counts them. When that still leaves more than MAX_DRAWN_BARS, bars up to
// 2, 4, 8... pixels wide are merged with neighbours that close, until it does not: a run of a
// thousand steps draws a bounded number of bars however far out it is zoomed.

import type { TimelineData } from "../api/types";
import { formatDuration } from "../format/duration";
import { type Axis, makeScale, parseTime, toReal, type View } from "./timeAxis";

/** A bar narrower than this (pixels) is merged with its neighbours. */
export const MIN_BAR_PX = 1;
/** The most bars drawn at once. */
export const MAX_DRAWN_BARS = 600;
/** How far past the plot's edges (in pixels) a bar or mark still counts as in view: the run's
 * last instant maps to the right edge, give or take a rounding error. */
const EDGE_PX = 0.5;

export const LANE_NAMES: Record<number, string> = {
  0: "attempts",
  1: "model",
  2: "tools",
  3: "waits",
  4: "steps",
};

export interface DrawnBar {
  x: number;
  width: number;
  lane: number;
  kind: string;
  /** The bars' outcome; "mixed" when merged bars ended differently, "open" while running. */
  outcome: string;
  /** The first seq of the (first) bar. */
  seq: number;
  /** How many bars this drawn bar stands for. */
  count: number;
  label: string;
}

export interface DrawnGap {
  x: number;
  width: number;
  seconds: number;
  label: string;
}

export interface DrawnMark {
  x: number;
  kind: string;
  seq: number;
  label: string;
}

export interface Tick {
  x: number;
  label: string;
}

export interface TimelineLayout {
  bars: DrawnBar[];
  gaps: DrawnGap[];
  marks: DrawnMark[];
  ticks: Tick[];
  /** The lanes that have bars, in order: the rows to draw. */
  lanes: number[];
  /** How many bars of the run fall in view (before merging). */
  inView: number;
  /** The active time at a pixel of the plot. */
  invert: (px: number) => number;
}

interface Placed {
  x0: number;
  x1: number;
  lane: number;
  kind: string;
  outcome: string;
  seq: number;
  label: string;
}

export function idleLabel(seconds: number): string {
  return `idle ${formatDuration(seconds)}`;
}

/** Offset from the run's start, as a label: "+1m 05s". */
export function offsetLabel(axis: Axis, ms: number): string {
  return `+${formatDuration(Math.max(0, (ms - axis.startMs) / 1000))}`;
}

export function layoutTimeline(
  data: TimelineData,
  axis: Axis,
  view: View,
  width: number,
): TimelineLayout {
  const scale = makeScale(axis, view, width);
  const lanes = [...new Set(data.bars.map((b) => b.lane))].sort((a, b) => a - b);
  const byLane = new Map<number, Placed[]>();
  let inView = 0;
  for (const bar of data.bars) {
    const startMs = parseTime(bar.start);
    const endMs = bar.end === null ? axis.endMs : parseTime(bar.end);
    const x0 = scale.x(startMs);
    const x1 = scale.x(Math.max(startMs, endMs));
    if (x1 < -EDGE_PX || x0 > width + EDGE_PX) continue; // culled: out of view
    inView++;
    const placed: Placed = {
      x0: Math.max(0, x0),
      x1: Math.min(width, x1),
      lane: bar.lane,
      kind: bar.kind,
      outcome: bar.end === null ? "open" : (bar.outcome ?? "none"),
      seq: bar.seq,
      label: bar.label,
    };
    const lane = byLane.get(bar.lane);
    if (lane) lane.push(placed);
    else byLane.set(bar.lane, [placed]);
  }
  for (const placed of byLane.values()) placed.sort((a, b) => a.x0 - b.x0 || a.seq - b.seq);
  let bars: DrawnBar[] = [];
  for (let px = MIN_BAR_PX; ; px *= 2) {
    bars = [];
    for (const lane of lanes) bars.push(...mergeLane(byLane.get(lane) ?? [], px));
    if (bars.length <= MAX_DRAWN_BARS || px > width) break;
  }

  const gaps = scale.gaps.map((gap) => ({
    x: scale.x(gap.startMs),
    width: scale.gapPx,
    seconds: gap.seconds,
    label: idleLabel(gap.seconds),
  }));

  const marks: DrawnMark[] = [];
  for (const mark of data.marks) {
    const x = scale.x(parseTime(mark.at));
    if (x < -EDGE_PX || x > width + EDGE_PX) continue;
    marks.push({ x: Math.min(width, Math.max(0, x)), kind: mark.kind, seq: mark.seq, label: mark.label });
  }

  const ticks = ticksFor(axis, scale.invert, width);
  return { bars, gaps, marks, ticks, lanes, inView, invert: scale.invert };
}

/** The drawn bars of one lane (`placed` in x order): a bar narrower than `px` joins the
 * merged bar before it when it starts within `px` of that bar's end. */
function mergeLane(placed: readonly Placed[], px: number): DrawnBar[] {
  const drawn: DrawnBar[] = [];
  let bucket: DrawnBar | null = null;
  const close = () => {
    if (bucket) {
      bucket.width = Math.max(bucket.width, MIN_BAR_PX);
      drawn.push(bucket);
      bucket = null;
    }
  };
  for (const bar of placed) {
    const width = bar.x1 - bar.x0;
    if (width >= px) {
      close();
      drawn.push({ ...pick(bar), x: bar.x0, width, count: 1 });
      continue;
    }
    const current: DrawnBar | null = bucket;
    if (current && bar.x0 <= current.x + Math.max(current.width, MIN_BAR_PX) + px - MIN_BAR_PX) {
      current.width = Math.max(current.x + current.width, bar.x1) - current.x;
      current.count++;
      if (current.outcome !== bar.outcome) current.outcome = "mixed";
      if (current.kind !== bar.kind) current.kind = "mixed";
      current.label = `${current.count} bars`;
      continue;
    }
    close();
    bucket = { ...pick(bar), x: bar.x0, width, count: 1 };
  }
  close();
  return drawn;
}

function pick(bar: Placed) {
  return { lane: bar.lane, kind: bar.kind, outcome: bar.outcome, seq: bar.seq, label: bar.label };
}

function ticksFor(axis: Axis, invert: (px: number) => number, width: number): Tick[] {
  const count = Math.max(2, Math.min(8, Math.floor(width / 120)));
  const ticks: Tick[] = [];
  for (let i = 0; i <= count; i++) {
    const x = (width * i) / count;
    ticks.push({ x, label: offsetLabel(axis, toReal(axis, invert(x), i > 0)) });
  }
  return ticks;
}
