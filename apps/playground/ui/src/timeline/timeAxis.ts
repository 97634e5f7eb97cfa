// The timeline's time axis: real time with every idle stretch longer than 30 s taken out.
//
// "Active time" is the run's time with those gaps removed; a view is a range of active time.
// On screen each gap in view is a fixed-width band labelled with how long it was, and the
// rest of the width is shared by the active time in view, so a run that slept an hour between
// two turns still shows both turns at a readable size.

import type { TimelineData } from "../api/types";

/** Idle stretches at least this long are compressed (the server reports the same ones). */
export const GAP_MIN_SECONDS = 30;
/** The width of a compressed gap on screen, in pixels (less when many share the width). */
export const GAP_PX = 72;

export interface AxisGap {
  startMs: number;
  endMs: number;
  seconds: number;
  /** Where the gap sits in active time, in seconds from the start. */
  activeAt: number;
}

export interface Axis {
  startMs: number;
  endMs: number;
  gaps: AxisGap[];
  /** The run's length in active time, seconds. */
  totalActive: number;
}

/** A range of active time, in seconds from the start. */
export interface View {
  from: number;
  to: number;
}

/** The smallest range a view zooms into, in seconds. */
export const MIN_SPAN = 0.001;

export function parseTime(iso: string): number {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new Error(`timeline: "${iso}" is not a timestamp`);
  return ms;
}

export function buildAxis(data: Pick<TimelineData, "start" | "end" | "gaps">): Axis {
  const startMs = parseTime(data.start);
  const endMs = Math.max(startMs, parseTime(data.end));
  const raw = data.gaps
    .map((g) => ({
      startMs: Math.max(startMs, parseTime(g.start)),
      endMs: Math.min(endMs, parseTime(g.end)),
    }))
    .filter((g) => (g.endMs - g.startMs) / 1000 > GAP_MIN_SECONDS)
    .sort((a, b) => a.startMs - b.startMs);
  const gaps: AxisGap[] = [];
  let removed = 0;
  for (const gap of raw) {
    const previous = gaps[gaps.length - 1];
    if (previous && gap.startMs <= previous.endMs) {
      // Overlapping gaps are one idle stretch.
      const extra = Math.max(0, gap.endMs - previous.endMs);
      previous.endMs += extra;
      previous.seconds = (previous.endMs - previous.startMs) / 1000;
      removed += extra;
      continue;
    }
    gaps.push({
      startMs: gap.startMs,
      endMs: gap.endMs,
      seconds: (gap.endMs - gap.startMs) / 1000,
      activeAt: (gap.startMs - startMs - removed) / 1000,
    });
    removed += gap.endMs - gap.startMs;
  }
  const totalActive = (endMs - startMs - removed) / 1000;
  return { startMs, endMs, gaps, totalActive };
}

export function fullView(axis: Axis): View {
  return { from: 0, to: Math.max(axis.totalActive, MIN_SPAN) };
}

/** A real time as active time (a time inside a gap is the gap's place). */
export function toActive(axis: Axis, ms: number): number {
  let removed = 0;
  for (const gap of axis.gaps) {
    if (ms <= gap.startMs) break;
    if (ms < gap.endMs) return gap.activeAt;
    removed += gap.endMs - gap.startMs;
  }
  return (ms - axis.startMs - removed) / 1000;
}

/** An active time as real time; at a gap's place, its start (or its end with `afterGap`). */
export function toReal(axis: Axis, active: number, afterGap = false): number {
  let removed = 0;
  for (const gap of axis.gaps) {
    if (active < gap.activeAt || (active === gap.activeAt && !afterGap)) break;
    removed += gap.endMs - gap.startMs;
  }
  return axis.startMs + active * 1000 + removed;
}

/** Pixels for a view of the axis `width` pixels wide, and back. */
export interface Scale {
  view: View;
  width: number;
  gapPx: number;
  pxPerSecond: number;
  /** The gaps in view, in order. */
  gaps: AxisGap[];
  x: (ms: number) => number;
  /** The active time at pixel `px`. */
  invert: (px: number) => number;
}

export function makeScale(axis: Axis, view: View, width: number): Scale {
  const gaps = axis.gaps.filter((g) => g.activeAt >= view.from && g.activeAt <= view.to);
  const gapPx = gaps.length ? Math.min(GAP_PX, (width * 0.5) / gaps.length) : 0;
  const span = Math.max(view.to - view.from, MIN_SPAN);
  const pxPerSecond = (width - gapPx * gaps.length) / span;

  const x = (ms: number): number => {
    let bands = 0;
    for (const gap of gaps) {
      if (ms >= gap.endMs) bands += gapPx;
      else if (ms > gap.startMs) bands += (gapPx * (ms - gap.startMs)) / (gap.endMs - gap.startMs);
    }
    return (toActive(axis, ms) - view.from) * pxPerSecond + bands;
  };

  const invert = (px: number): number => {
    let bands = 0;
    for (const gap of gaps) {
      const gapX = (gap.activeAt - view.from) * pxPerSecond + bands;
      if (px < gapX) break;
      if (px <= gapX + gapPx) return gap.activeAt;
      bands += gapPx;
    }
    return view.from + (px - bands) / pxPerSecond;
  };

  return { view, width, gapPx, pxPerSecond, gaps, x, invert };
}

export function clampView(axis: Axis, view: View): View {
  const total = Math.max(axis.totalActive, MIN_SPAN);
  let from = Math.max(0, Math.min(view.from, view.to));
  let to = Math.min(total, Math.max(view.from, view.to));
  if (to - from < MIN_SPAN) {
    const middle = (from + to) / 2;
    from = Math.max(0, middle - MIN_SPAN / 2);
    to = Math.min(total, from + MIN_SPAN);
    from = Math.max(0, to - MIN_SPAN);
  }
  return { from, to };
}

/** The view `factor` times as wide (0.5 zooms in), around its middle. */
export function zoomView(axis: Axis, view: View, factor: number): View {
  const middle = (view.from + view.to) / 2;
  const half = ((view.to - view.from) * factor) / 2;
  let from = middle - half;
  let to = middle + half;
  const total = Math.max(axis.totalActive, MIN_SPAN);
  if (from < 0) {
    to -= from;
    from = 0;
  }
  if (to > total) {
    from -= to - total;
    to = total;
  }
  return clampView(axis, { from, to });
}
