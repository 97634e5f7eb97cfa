// The timeline as SVG: one lane per kind of bar, compressed idle gaps, marks for crashes and
// unknown outcomes; zoom by dragging a range (brush) or with the buttons.

import { type PointerEvent, useMemo, useRef, useState } from "react";
import type { TimelineData } from "../api/types";
import { inert } from "../inert";
import { buildAxis, clampView, fullView, toReal, type View, zoomView } from "./timeAxis";
import { type DrawnBar, LANE_NAMES, layoutTimeline, offsetLabel } from "./timelineLayout";
import { useWidth } from "./useWidth";

const LABEL_W = 76;
const AXIS_H = 28;
const LANE_H = 26;
const BAR_H = 16;
const MARK_PAD = 14;

export function TimelineChart({ data }: { data: TimelineData }) {
  const axis = useMemo(() => buildAxis(data), [data]);
  const [view, setView] = useState<View | null>(null);
  const [box, width] = useWidth<HTMLDivElement>(900);
  const plotW = Math.max(100, width - LABEL_W - 8);
  const shown = useMemo(() => clampView(axis, view ?? fullView(axis)), [axis, view]);
  const layout = useMemo(() => layoutTimeline(data, axis, shown, plotW), [data, axis, shown, plotW]);
  const brush = useBrush(plotW, (x0, x1) => {
    const from = layout.invert(x0);
    const to = layout.invert(x1);
    setView(clampView(axis, { from, to }));
  });

  const lanes = layout.lanes.length ? layout.lanes : [0];
  const height = AXIS_H + lanes.length * LANE_H + MARK_PAD;
  const laneY = (lane: number) => AXIS_H + Math.max(0, lanes.indexOf(lane)) * LANE_H;
  const rangeFrom = offsetLabel(axis, toReal(axis, shown.from, true));
  const rangeTo = offsetLabel(axis, toReal(axis, shown.to));
  const total = offsetLabel(axis, axis.endMs);

  return (
    <div className="timeline-box" ref={box}>
      <div className="toolbar">
        <button type="button" data-testid="timeline-zoom-in" onClick={() => setView(zoomView(axis, shown, 0.5))}>
          Zoom in
        </button>
        <button type="button" data-testid="timeline-zoom-out" onClick={() => setView(zoomView(axis, shown, 2))}>
          Zoom out
        </button>
        <button type="button" data-testid="timeline-zoom-reset" onClick={() => setView(null)}>
          Reset
        </button>
        <span className="muted" data-testid="timeline-range">
          {rangeFrom} – {rangeTo} of {total}
        </span>
        <span className="muted">
          {layout.inView} bars in view, {layout.bars.length} drawn · drag across the chart to zoom
        </span>
      </div>
      <svg
        data-testid="timeline"
        className="timeline"
        width={LABEL_W + plotW}
        height={height}
        role="img"
        aria-label="Run timeline"
      >
        {lanes.map((lane) => (
          <g key={lane}>
            <rect x={0} y={laneY(lane)} width={LABEL_W + plotW} height={LANE_H} className="lane-bg" />
            <text x={6} y={laneY(lane) + LANE_H / 2 + 4} className="lane-label">
              {LANE_NAMES[lane] ?? `lane ${lane}`}
            </text>
          </g>
        ))}
        <g transform={`translate(${LABEL_W},0)`}>
          <rect
            x={0}
            y={0}
            width={plotW}
            height={height}
            className="brush-area"
            data-testid="timeline-brush"
            onPointerDown={brush.down}
            onPointerMove={brush.move}
            onPointerUp={brush.up}
            onPointerCancel={brush.cancel}
          />
          {layout.ticks.map((tick, i) => (
            <g key={i} className="tick" pointerEvents="none">
              <line x1={tick.x} x2={tick.x} y1={AXIS_H - 6} y2={height - MARK_PAD} />
              <text x={Math.min(Math.max(tick.x, 20), plotW - 20)} y={AXIS_H - 10} textAnchor="middle">
                {tick.label}
              </text>
            </g>
          ))}
          {layout.gaps.map((gap, i) => (
            <g key={`gap-${i}`} data-testid="timeline-gap" className="gap" pointerEvents="none">
              <rect x={gap.x} y={AXIS_H} width={gap.width} height={lanes.length * LANE_H} />
              <text x={gap.x + gap.width / 2} y={AXIS_H + (lanes.length * LANE_H) / 2 + 4} textAnchor="middle">
                {gap.label}
              </text>
            </g>
          ))}
          {layout.bars.map((bar) => (
            <Bar key={`${bar.lane}-${bar.seq}-${bar.x}`} bar={bar} y={laneY(bar.lane) + (LANE_H - BAR_H) / 2} />
          ))}
          {layout.marks.map((mark, i) => (
            <g
              key={`mark-${mark.seq}-${i}`}
              data-testid="timeline-mark"
              data-kind={mark.kind}
              data-seq={mark.seq}
              className={`mark mark-${mark.kind}`}
            >
              <title>{inert(`${mark.kind} at seq ${mark.seq}: ${mark.label}`)}</title>
              <line x1={mark.x} x2={mark.x} y1={AXIS_H} y2={height - MARK_PAD} />
              <path d={`M${mark.x - 5},${height - 2} L${mark.x + 5},${height - 2} L${mark.x},${height - MARK_PAD + 2} Z`} />
            </g>
          ))}
          {brush.range && (
            <rect
              className="brush"
              x={Math.min(brush.range[0], brush.range[1])}
              y={0}
              width={Math.abs(brush.range[1] - brush.range[0])}
              height={height}
              pointerEvents="none"
            />
          )}
        </g>
      </svg>
    </div>
  );
}

function Bar({ bar, y }: { bar: DrawnBar; y: number }) {
  const title =
    bar.count > 1
      ? `${bar.count} ${bar.kind} bars from seq ${bar.seq} (${bar.outcome})`
      : `${bar.label} · ${bar.kind} · ${bar.outcome} · seq ${bar.seq}`;
  return (
    <rect
      data-testid="timeline-bar"
      data-kind={bar.kind}
      data-outcome={bar.outcome}
      data-seq={bar.seq}
      data-count={bar.count}
      className={`bar bar-${bar.kind} outcome-${bar.outcome}`}
      x={bar.x}
      y={y}
      width={bar.width}
      height={BAR_H}
      pointerEvents="none"
    >
      <title>{inert(title)}</title>
    </rect>
  );
}

interface Brush {
  range: [number, number] | null;
  down: (event: PointerEvent<SVGRectElement>) => void;
  move: (event: PointerEvent<SVGRectElement>) => void;
  up: (event: PointerEvent<SVGRectElement>) => void;
  cancel: () => void;
}

/** Dragging across the plot selects a range of pixels; letting go zooms to it. */
function useBrush(width: number, onRange: (x0: number, x1: number) => void): Brush {
  const [range, setRange] = useState<[number, number] | null>(null);
  const start = useRef<number | null>(null);
  const at = (event: PointerEvent<SVGRectElement>) => {
    const rect = event.currentTarget.getBoundingClientRect();
    return Math.min(width, Math.max(0, event.clientX - rect.left));
  };
  return {
    range,
    down: (event) => {
      // Keep getting the moves while the pointer is outside the plot, until it is let go.
      event.currentTarget.setPointerCapture?.(event.pointerId);
      start.current = at(event);
      setRange([start.current, start.current]);
    },
    move: (event) => {
      if (start.current === null) return;
      setRange([start.current, at(event)]);
    },
    up: (event) => {
      if (start.current === null) return;
      const x0 = start.current;
      const x1 = at(event);
      start.current = null;
      setRange(null);
      if (Math.abs(x1 - x0) >= 3) onRange(Math.min(x0, x1), Math.max(x0, x1));
    },
    cancel: () => {
      start.current = null;
      setRange(null);
    },
  };
}
