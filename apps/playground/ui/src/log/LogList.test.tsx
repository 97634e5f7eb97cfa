import { fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import type { LogRecord } from "../api/types";
import { LogList, ROW_HEIGHT, VIEW_HEIGHT } from "./LogList";

const records: LogRecord[] = Array.from({ length: 5000 }, (_, seq) => ({
  run_id: "r1",
  seq,
  attempt: 1,
  at: "2026-03-01T10:00:00Z",
  body: { type: seq % 2 ? "tool_call_finished" : "model_call_finished", result: `row ${seq} \u001b[0m` },
}));

const shownSeqs = () => screen.getAllByTestId("log-record").map((row) => Number(row.dataset.seq));

describe("LogList", () => {
  it("mounts only the rows in view of five thousand records", () => {
    render(<LogList records={records} shown={5000} lastSeq={4999} hasMore={false} loading={false} loadMore={() => {}} />);
    expect(screen.getByTestId("log-count").textContent).toBe("5000 records");
    const seqs = shownSeqs();
    expect(seqs[0]).toBe(0);
    expect(seqs.length).toBeLessThan(30);
    expect(screen.getAllByTestId("log-record-body")[0]!.textContent).toContain("\\x1b[0m");
  });

  it("moves the window as the list scrolls, rows in seq order", () => {
    render(<LogList records={records} shown={5000} lastSeq={4999} hasMore={false} loading={false} loadMore={() => {}} />);
    const list = screen.getByTestId("log-list");
    list.scrollTop = 3000 * ROW_HEIGHT;
    fireEvent.scroll(list);
    const seqs = shownSeqs();
    expect(seqs).toContain(3000);
    expect(seqs.length).toBeLessThan(30);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  });

  it("asks for the next page near the end, and offers a button for it", () => {
    const loadMore = vi.fn();
    render(<LogList records={records.slice(0, 200)} shown={200} lastSeq={4999} hasMore loading={false} loadMore={loadMore} />);
    expect(screen.getByTestId("log-count").textContent).toBe("5000 records");
    const list = screen.getByTestId("log-list");
    list.scrollTop = 50 * ROW_HEIGHT;
    fireEvent.scroll(list);
    expect(loadMore).not.toHaveBeenCalled();
    list.scrollTop = 200 * ROW_HEIGHT - VIEW_HEIGHT;
    fireEvent.scroll(list);
    expect(loadMore).toHaveBeenCalledTimes(1);
    fireEvent.click(screen.getByTestId("log-load-more"));
    expect(loadMore).toHaveBeenCalledTimes(2);
  });
});
