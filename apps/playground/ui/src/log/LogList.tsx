// A run's log as a windowed list: rows have one height, and only the rows in view (and a
// few around them) are mounted, so a log of thousands of records stays light. Pages of 200
// load from /log as the list is scrolled to its end (or with the button).

import { type UIEvent, useState } from "react";
import type { LogRecord } from "../api/types";
import { JsonBlock } from "../components/InertText";
import { formatTime } from "../format/duration";
import { inert } from "../inert";
import { nearEnd, rowWindow } from "./logWindow";

export const ROW_HEIGHT = 136;
export const VIEW_HEIGHT = 560;
/** Rows mounted above and below the ones in view. */
const OVERSCAN = 8;
/** The most characters of one record's JSON shown. */
const BODY_LIMIT = 20_000;

export interface LogListProps {
  records: readonly LogRecord[];
  /** How many records from the start are shown (those known without a hole). */
  shown: number;
  lastSeq: number;
  hasMore: boolean;
  loading: boolean;
  loadMore: () => void;
}

export function LogList({ records, shown, lastSeq, hasMore, loading, loadMore }: LogListProps) {
  const [scrollTop, setScrollTop] = useState(0);
  const { first, last } = rowWindow(scrollTop, VIEW_HEIGHT, ROW_HEIGHT, shown, OVERSCAN);

  const onScroll = (event: UIEvent<HTMLDivElement>) => {
    const top = event.currentTarget.scrollTop;
    setScrollTop(top);
    if (hasMore && !loading && nearEnd(top, VIEW_HEIGHT, ROW_HEIGHT, shown)) loadMore();
  };

  return (
    <div className="log">
      <div className="toolbar">
        <span data-testid="log-count">{lastSeq + 1} records</span>
        <span className="muted">
          {shown} loaded{loading ? " · loading…" : ""}
        </span>
        {hasMore && (
          <button type="button" data-testid="log-load-more" onClick={loadMore} disabled={loading}>
            Load more
          </button>
        )}
      </div>
      <div
        className="log-list"
        data-testid="log-list"
        style={{ height: VIEW_HEIGHT }}
        onScroll={onScroll}
      >
        <div style={{ height: shown * ROW_HEIGHT, position: "relative" }}>
          {records.slice(first, last).map((record, i) => (
            <LogRow key={record.seq} record={record} top={(first + i) * ROW_HEIGHT} />
          ))}
        </div>
      </div>
    </div>
  );
}

function LogRow({ record, top }: { record: LogRecord; top: number }) {
  const type = record.body.type;
  return (
    <div
      className={`log-record type-${type}`}
      data-testid="log-record"
      data-seq={record.seq}
      data-type={type}
      style={{ top, height: ROW_HEIGHT }}
    >
      <div className="log-head">
        <span className="seq">#{record.seq}</span>
        <span className="type">{inert(type, { oneLine: true })}</span>
        <span className="muted">attempt {record.attempt}</span>
        <span className="muted">{formatTime(record.at)}</span>
      </div>
      <JsonBlock value={record.body} testId="log-record-body" className="log-body" limit={BODY_LIMIT} />
    </div>
  );
}
