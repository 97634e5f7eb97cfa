// Keeping a run's records in seq order, each once, however they arrive: a page of the log
// and the live stream overlap, a reconnect may resend, and a late page may land after newer
// live records.

import type { LogRecord } from "../api/types";

/** `known` (sorted by seq, each seq once) with `incoming` merged in, sorted, each seq once.
 * Returns `known` itself when nothing new arrived, so a caller can skip a render. */
export function mergeRecords(known: readonly LogRecord[], incoming: readonly LogRecord[]) {
  if (incoming.length === 0) return known;
  const last = known.length ? known[known.length - 1]!.seq : -1;
  if (isStrictlyAscending(incoming) && incoming[0]!.seq > last) {
    return [...known, ...incoming]; // the usual live case: all new, in order
  }
  const bySeq = new Map<number, LogRecord>();
  for (const record of known) bySeq.set(record.seq, record);
  let added = false;
  for (const record of incoming) {
    if (!bySeq.has(record.seq)) {
      bySeq.set(record.seq, record);
      added = true;
    }
  }
  if (!added) return known;
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

function isStrictlyAscending(records: readonly LogRecord[]): boolean {
  for (let i = 1; i < records.length; i++) {
    if (records[i]!.seq <= records[i - 1]!.seq) return false;
  }
  return true;
}

/** How many records from seq 0 on are known without a hole: the ones a list can show. */
export function contiguousCount(records: readonly LogRecord[]): number {
  // Records are sorted and unique, so the prefix without a hole is where seq == index.
  let low = 0;
  let high = records.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (records[mid]!.seq === mid) low = mid + 1;
    else high = mid;
  }
  return low;
}
