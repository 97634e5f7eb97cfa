// A run's log as a page sees it: the first page from /log, older pages on demand, and the
// live records from /events after the last seq the log had when the page opened.
//
// The browser reconnects an EventSource by itself and sends Last-Event-ID (each record's seq),
// so a reconnect resumes where the stream broke; records that arrive twice or out of order
// (a page and the stream overlap) are merged by seq. Mount one per run (key the component by
// the run id): the state belongs to one run.

import { useCallback, useEffect, useRef, useState } from "react";
import { errorMessage, eventsUrl, getLog } from "../api/client";
import type { LogRecord } from "../api/types";
import { contiguousCount, mergeRecords } from "./mergeRecords";

export const PAGE_SIZE = 200;
/** Live records are applied in batches, at most this often, so a fast run renders calmly. */
const FLUSH_MS = 50;

export interface RunRecords {
  /** Every record known so far, in seq order, each once. */
  records: readonly LogRecord[];
  /** How many records from seq 0 on are known without a hole (what a list shows). */
  shown: number;
  /** The highest seq known to exist (from the log's `last_seq` or a live record). */
  lastSeq: number;
  /** Older records are still to be loaded from /log. */
  hasMore: boolean;
  loading: boolean;
  loadMore: () => void;
  /** The live stream is connected. */
  live: boolean;
  /** The run's terminal status once the stream said `end`. */
  ended: string | null;
  /** Counts every change that arrived live: depend on it to refresh derived views. */
  changes: number;
  error: string | null;
}

export function useRunRecords(runId: string): RunRecords {
  const [records, setRecords] = useState<readonly LogRecord[]>([]);
  const [historyEnd, setHistoryEnd] = useState(-1);
  const [loading, setLoading] = useState(true);
  const [live, setLive] = useState(false);
  const [ended, setEnded] = useState<string | null>(null);
  const [changes, setChanges] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const loadingRef = useRef(true);

  useEffect(() => {
    let closed = false;
    let source: EventSource | null = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const buffer: LogRecord[] = [];

    const flush = () => {
      timer = undefined;
      const batch = buffer.splice(0).sort((a, b) => a.seq - b.seq);
      setRecords((known) => mergeRecords(known, batch));
      setChanges((n) => n + 1);
    };
    const receive = (event: MessageEvent<string>) => {
      try {
        buffer.push(JSON.parse(event.data) as LogRecord);
      } catch {
        setError(`run ${runId}: a live record could not be read: ${event.data.slice(0, 200)}`);
        return;
      }
      timer ??= setTimeout(flush, FLUSH_MS);
    };
    const finish = (event: MessageEvent<string>) => {
      let status = "ended";
      try {
        status = (JSON.parse(event.data) as { status?: string }).status ?? status;
      } catch {
        // The stream ended all the same; its status shows on the next read of the run.
      }
      source?.close();
      if (timer !== undefined) {
        clearTimeout(timer);
        flush();
      }
      setLive(false);
      setEnded(status);
      setChanges((n) => n + 1);
    };

    getLog(runId, -1, PAGE_SIZE)
      .then((page) => {
        if (closed) return;
        setRecords((known) => mergeRecords(known, page.records));
        setHistoryEnd(page.last_seq);
        loadingRef.current = false;
        setLoading(false);
        source = new EventSource(eventsUrl(runId, page.last_seq));
        source.onopen = () => setLive(true);
        source.onerror = () => setLive(false);
        source.addEventListener("record", receive);
        source.addEventListener("end", finish);
      })
      .catch((reason: unknown) => {
        if (closed) return;
        loadingRef.current = false;
        setLoading(false);
        setError(errorMessage(reason));
      });

    return () => {
      closed = true;
      source?.close();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [runId]);

  const shown = contiguousCount(records);
  const lastSeq = Math.max(historyEnd, records.length ? records[records.length - 1]!.seq : -1);
  const hasMore = shown <= historyEnd;

  const loadMore = useCallback(() => {
    if (loadingRef.current || !hasMore) return;
    loadingRef.current = true;
    setLoading(true);
    getLog(runId, shown - 1, PAGE_SIZE)
      .then((page) => {
        setRecords((known) => mergeRecords(known, page.records));
        setHistoryEnd((end) => Math.max(end, page.last_seq));
      })
      .catch((reason: unknown) => setError(errorMessage(reason)))
      .finally(() => {
        loadingRef.current = false;
        setLoading(false);
      });
  }, [runId, shown, hasMore]);

  return { records, shown, lastSeq, hasMore, loading, loadMore, live, ended, changes, error };
}
