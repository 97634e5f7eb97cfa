import { describe, expect, it } from "vitest";
import type { TextEvent, ThreadMessage } from "../api/types";
import { applyTextEvent, EMPTY_TEXT, mergeMessages, pendingWords } from "./textThread";

const ev = (kind: TextEvent["kind"], seq: number, text = ""): TextEvent => ({ kind, run_id: "r2", seq, text });

describe("the assistant's live text", () => {
  it("grows with deltas, is dropped on discard, and becomes a message on final", () => {
    let state = applyTextEvent(EMPTY_TEXT, ev("delta", 5, "You "));
    state = applyTextEvent(state, ev("delta", 5, "said"));
    expect(state.live).toBe("You said");
    state = applyTextEvent(state, ev("discard", 5));
    expect(state.live).toBeNull();
    state = applyTextEvent(state, ev("delta", 5, "You said: hi"));
    state = applyTextEvent(state, ev("final", 6, "You said: hi"));
    expect(state.live).toBeNull();
    expect(state.finals).toEqual([{ role: "assistant", text: "You said: hi", run_id: "r2", seq: 6 }]);
    expect(state.lastFinalSeq).toBe(6);
    // A final sent again after a reconnect is shown once.
    expect(applyTextEvent(state, ev("final", 6, "You said: hi")).finals).toHaveLength(1);
  });

  it("merges finals into the thread once each, in run order", () => {
    const thread: ThreadMessage[] = [
      { role: "user", text: "hi", run_id: "r1", seq: 0 },
      { role: "assistant", text: "You said: hi", run_id: "r1", seq: 4 },
      { role: "user", text: "again", run_id: "r2", seq: 0 },
    ];
    const finals: ThreadMessage[] = [{ role: "assistant", text: "You said: again", run_id: "r2", seq: 6 }];
    expect(mergeMessages(thread, finals).map((m) => m.text)).toEqual(["hi", "You said: hi", "again", "You said: again"]);
    const reread = [...thread, finals[0]!];
    expect(mergeMessages(reread, finals)).toHaveLength(4);
  });

  it("hides the words being written once their message is in the thread", () => {
    const state = applyTextEvent(EMPTY_TEXT, ev("delta", 5, "You said"));
    expect(pendingWords(state, [], "r2")).toBe("You said");
    const landed: ThreadMessage[] = [{ role: "assistant", text: "You said: x", run_id: "r2", seq: 6 }];
    expect(pendingWords(state, landed, "r2")).toBeNull();
    const earlier: ThreadMessage[] = [{ role: "assistant", text: "before", run_id: "r2", seq: 3 }];
    expect(pendingWords(state, earlier, "r2")).toBe("You said");
  });
});
