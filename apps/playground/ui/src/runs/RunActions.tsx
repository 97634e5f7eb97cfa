// What a person can do to a run that has not ended: cancel it, interrupt it with a message,
// or send it a message on a queue.

import { type FormEvent, useState } from "react";
import { cancelRun, errorMessage, interruptRun, sendToRun } from "../api/client";
import type { SendQueue } from "../api/types";
import { ErrorNote } from "../components/ErrorNote";

interface RunActionsProps {
  runId: string;
  ended: boolean;
}

export function RunActions({ runId, ended }: RunActionsProps) {
  const [interrupt, setInterrupt] = useState("");
  const [message, setMessage] = useState("");
  const [queue, setQueue] = useState<SendQueue>("follow_up");
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const act = (what: string, action: () => Promise<{ seq: number }>, after?: () => void) => {
    setBusy(true);
    setError(null);
    setNote(null);
    action()
      .then((accepted) => {
        setNote(`${what}: recorded at seq ${accepted.seq}`);
        after?.();
      })
      .catch((reason: unknown) => setError(errorMessage(reason)))
      .finally(() => setBusy(false));
  };

  const onInterrupt = (event: FormEvent) => {
    event.preventDefault();
    if (!interrupt.trim()) return;
    act("interrupted", () => interruptRun(runId, interrupt), () => setInterrupt(""));
  };
  const onSend = (event: FormEvent) => {
    event.preventDefault();
    if (!message.trim()) return;
    act(`sent (${queue})`, () => sendToRun(runId, message, queue), () => setMessage(""));
  };

  return (
    <section className="card actions">
      <h3>Actions</h3>
      <div className="action-row">
        <button
          type="button"
          className="danger"
          data-testid="cancel-button"
          disabled={busy || ended}
          onClick={() => act("cancelled", () => cancelRun(runId, "cancelled in the playground"))}
        >
          Cancel run
        </button>
      </div>
      <form className="action-row" onSubmit={onInterrupt}>
        <input
          data-testid="interrupt-input"
          placeholder="Interrupt with a message"
          value={interrupt}
          onChange={(e) => setInterrupt(e.target.value)}
        />
        <button type="submit" data-testid="interrupt-button" disabled={busy || ended || !interrupt.trim()}>
          Interrupt
        </button>
      </form>
      <form className="action-row" onSubmit={onSend}>
        <input
          data-testid="send-input"
          placeholder="Send a message"
          value={message}
          onChange={(e) => setMessage(e.target.value)}
        />
        <select data-testid="send-queue" value={queue} onChange={(e) => setQueue(e.target.value as SendQueue)}>
          <option value="steer">steer</option>
          <option value="follow_up">follow_up</option>
          <option value="next_run">next_run</option>
        </select>
        <button type="submit" data-testid="send-button" disabled={busy || !message.trim()}>
          Send
        </button>
      </form>
      {note && <p className="muted">{note}</p>}
      <ErrorNote message={error} />
    </section>
  );
}
