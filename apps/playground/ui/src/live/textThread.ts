// Applying the assistant's text events (/api/runs/:id/text) to what a chat shows: one
// provisional bubble for the words being written, and the messages for good.

import type { TextEvent, ThreadMessage } from "../api/types";

export interface TextState {
  /** The assistant's messages that arrived as `final` events, in order, each once. */
  finals: ThreadMessage[];
  /** The words of the message being written (`delta`s since the last final or discard). */
  live: string | null;
  /** The seq its record will be written at or after. */
  liveSeq: number;
  /** The seq of the last final event: resume the stream after it. */
  lastFinalSeq: number;
}

export const EMPTY_TEXT: TextState = { finals: [], live: null, liveSeq: -1, lastFinalSeq: -1 };

export function applyTextEvent(state: TextState, event: TextEvent): TextState {
  switch (event.kind) {
    case "delta":
      return {
        ...state,
        live: (state.live ?? "") + event.text,
        liveSeq: state.live === null ? event.seq : state.liveSeq,
      };
    case "discard":
      return { ...state, live: null };
    case "final": {
      const seen = state.finals.some((m) => m.run_id === event.run_id && m.seq === event.seq);
      if (seen) return { ...state, live: null };
      const message: ThreadMessage = {
        role: "assistant",
        text: event.text,
        run_id: event.run_id,
        seq: event.seq,
      };
      return {
        finals: [...state.finals, message],
        live: null,
        liveSeq: -1,
        lastFinalSeq: Math.max(state.lastFinalSeq, event.seq),
      };
    }
  }
}

const key = (m: ThreadMessage) => `${m.run_id}:${m.seq}:${m.role}`;

/** The thread's messages with the live finals not in it yet, each message once, in order. */
export function mergeMessages(
  thread: readonly ThreadMessage[],
  finals: readonly ThreadMessage[],
): ThreadMessage[] {
  const seen = new Set(thread.map(key));
  const extra = finals.filter((m) => !seen.has(key(m)));
  if (extra.length === 0) return [...thread];
  // Finals belong after the thread's messages of earlier runs; within a run, by seq.
  const order = new Map<string, number>();
  for (const m of thread) if (!order.has(m.run_id)) order.set(m.run_id, order.size);
  for (const m of extra) if (!order.has(m.run_id)) order.set(m.run_id, order.size);
  return [...thread, ...extra].sort(
    (a, b) => order.get(a.run_id)! - order.get(b.run_id)! || a.seq - b.seq,
  );
}

/** The words being written, unless their message is already shown for good (the thread was
 * read again after the model call's record landed, before its final event came). */
export function pendingWords(state: TextState, shown: readonly ThreadMessage[], runId: string) {
  if (state.live === null) return null;
  const landed = shown.some((m) => m.run_id === runId && m.role === "assistant" && m.seq >= state.liveSeq);
  return landed ? null : state.live;
}
