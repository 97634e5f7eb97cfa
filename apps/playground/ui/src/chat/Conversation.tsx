// The thread's messages, with the assistant's words shown as they are written.

import type { ThreadMessage } from "../api/types";
import { InertText } from "../components/InertText";

interface ConversationProps {
  messages: readonly ThreadMessage[];
  /** The assistant's words being written, not in the log yet. */
  liveText: string | null;
}

export function Conversation({ messages, liveText }: ConversationProps) {
  return (
    <div className="messages">
      {messages.map((m) => (
        <Message key={`${m.run_id}:${m.seq}:${m.role}`} message={m} />
      ))}
      {liveText !== null && (
        <div className="message message-assistant live" data-role="assistant">
          <InertText testId="live-text" text={liveText} />
        </div>
      )}
    </div>
  );
}

// The role's label is drawn by CSS (from data-role), so the element's text is the message alone.
function Message({ message }: { message: ThreadMessage }) {
  return (
    <div
      className={`message message-${message.role}`}
      data-testid="chat-message"
      data-role={message.role}
      data-run-id={message.run_id}
      data-seq={message.seq}
      data-tool={message.tool ?? undefined}
    >
      <InertText text={message.text} limit={message.role === "tool" ? 4000 : undefined} />
    </div>
  );
}
