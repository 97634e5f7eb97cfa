// Writing a message: it starts a run of the agent that continues the thread's last run.

import { type FormEvent, type KeyboardEvent, useState } from "react";
import { useNavigate } from "react-router";
import { errorMessage, startRun } from "../api/client";
import { ErrorNote } from "../components/ErrorNote";

/** The longest message the API takes. */
const MAX_MESSAGE = 20_000;

export function ChatComposer({ agent, continues }: { agent: string; continues: string | null }) {
  const navigate = useNavigate();
  const [message, setMessage] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const send = () => {
    const text = message.trim();
    if (!text || busy) return;
    setBusy(true);
    setError(null);
    startRun({ agent, message: text, ...(continues ? { continues } : {}) })
      .then((started) => {
        setMessage("");
        return navigate(`/chat/${encodeURIComponent(agent)}/${encodeURIComponent(started.run_id)}`);
      })
      .catch((reason: unknown) => setError(errorMessage(reason)))
      .finally(() => setBusy(false));
  };
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    send();
  };
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      send();
    }
  };

  return (
    <form className="composer" onSubmit={onSubmit}>
      <textarea
        data-testid="chat-input"
        rows={2}
        maxLength={MAX_MESSAGE}
        placeholder="Message (Enter sends, Shift+Enter for a new line)"
        value={message}
        onChange={(e) => setMessage(e.target.value)}
        onKeyDown={onKeyDown}
      />
      <button type="submit" data-testid="chat-send" disabled={busy || !message.trim()}>
        Send
      </button>
      <ErrorNote message={error} />
    </form>
  );
}
