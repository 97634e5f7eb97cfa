import { describe, expect, it } from "vitest";
import type { LogRecord } from "../api/types";
import { contiguousCount, mergeRecords } from "./mergeRecords";

const rec = (seq: number, type = "step"): LogRecord => ({
  run_id: "r1",
  seq,
  attempt: 1,
  at: "2026-03-01T10:00:00Z",
  body: { type },
});
const seqs = (records: readonly LogRecord[]) => records.map((r) => r.seq);

describe("mergeRecords", () => {
  it("appends records that follow", () => {
    expect(seqs(mergeRecords([rec(0), rec(1)], [rec(2), rec(3)]))).toEqual([0, 1, 2, 3]);
  });

  it("keeps each seq once when records arrive twice", () => {
    const known = [rec(0), rec(1), rec(2)];
    const merged = mergeRecords(known, [rec(1, "again"), rec(2, "again"), rec(3)]);
    expect(seqs(merged)).toEqual([0, 1, 2, 3]);
    expect(merged[1]!.body.type).toBe("step"); // the first copy stays
  });

  it("sorts records that arrive out of order", () => {
    expect(seqs(mergeRecords([rec(0), rec(5)], [rec(3), rec(1), rec(4), rec(2), rec(3)]))).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("returns the same array when nothing is new, so nothing re-renders", () => {
    const known = [rec(0), rec(1)];
    expect(mergeRecords(known, [])).toBe(known);
    expect(mergeRecords(known, [rec(1), rec(0)])).toBe(known);
  });
});

describe("contiguousCount", () => {
  it("counts the records from seq 0 on without a hole", () => {
    expect(contiguousCount([])).toBe(0);
    expect(contiguousCount([rec(0), rec(1), rec(2)])).toBe(3);
    expect(contiguousCount([rec(0), rec(1), rec(5), rec(6)])).toBe(2);
    expect(contiguousCount([rec(1), rec(2)])).toBe(0);
  });
});
