// The assistant's words in a run, live: /api/runs/:id/text as server-sent events.
// `final` events carry an id (their seq), so the browser's own reconnect resumes after the
// last final with Last-Event-ID; deltas are never replayed. Mount one per run.

import { useEffect, useState } from "react";
import { textUrl } from "../api/client";
import type { TextEvent } from "../api/types";
import { applyTextEvent, EMPTY_TEXT, type TextState } from "./textThread";

/** Follows the text of `runId` after the final at seq `after` while `open` is true. */
export function useRunText(runId: string, after: number, open: boolean): TextState {
  const [state, setState] = useState<TextState>(EMPTY_TEXT);

  useEffect(() => {
    if (!open) return;
    const source = new EventSource(textUrl(runId, after));
    source.addEventListener("text", (event: MessageEvent<string>) => {
      let parsed: TextEvent;
      try {
        parsed = JSON.parse(event.data) as TextEvent;
      } catch {
        return; // a torn event: the final text comes from the log
      }
      setState((current) => applyTextEvent(current, parsed));
    });
    // The stream ends with the run; closing it keeps the browser from reconnecting.
    source.addEventListener("end", () => source.close());
    return () => source.close();
  }, [runId, after, open]);

  return state;
}
