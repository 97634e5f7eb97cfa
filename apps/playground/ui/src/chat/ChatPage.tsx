// Chat with an agent: /chat/:agent starts a thread, /chat/:agent/:runId shows the thread whose
// last run is runId. Each message starts a run that continues the last one; the page follows
// the current run live (its words as they are written, approvals, questions, status).

import { useCallback, useEffect } from "react";
import { Link, useNavigate, useParams } from "react-router";
import { getRun, getThread } from "../api/client";
import { TERMINAL_STATUSES } from "../api/types";
import { ErrorNote } from "../components/ErrorNote";
import { InertText } from "../components/InertText";
import { StatusBadge } from "../components/StatusBadge";
import { useResource } from "../hooks/useResource";
import { mergeMessages, pendingWords } from "../live/textThread";
import { useRunRecords } from "../live/useRunRecords";
import { useRunText } from "../live/useRunText";
import { ChatComposer } from "./ChatComposer";
import { Conversation } from "./Conversation";
import { PendingApprovals } from "./PendingApprovals";
import { QuestionCard } from "./QuestionCard";

export function ChatRoute() {
  const { agent = "", runId } = useParams();
  return <ChatPage key={`${agent}/${runId ?? ""}`} agent={agent} runId={runId ?? null} />;
}

function ChatPage({ agent, runId }: { agent: string; runId: string | null }) {
  const chatPath = `/chat/${encodeURIComponent(agent)}`;
  return (
    <div className="chat">
      <h1>
        Chat with <InertText text={agent} oneLine />
        <Link className="small-link" to={chatPath}>
          new thread
        </Link>
      </h1>
      {runId ? (
        <ChatThread agent={agent} runId={runId} />
      ) : (
        <p className="muted">A new thread. Say something to start it.</p>
      )}
      <ChatComposer agent={agent} continues={runId} />
    </div>
  );
}

function ChatThread({ agent, runId }: { agent: string; runId: string }) {
  const navigate = useNavigate();
  const records = useRunRecords(runId);
  const loadRun = useCallback(() => getRun(runId), [runId]);
  const loadThread = useCallback(() => getThread(runId), [runId]);
  const detail = useResource(loadRun, records.changes, 300);
  const thread = useResource(loadThread, records.changes, 500);
  const status = detail.data?.status ?? null;
  const ended = records.ended !== null || (status !== null && TERMINAL_STATUSES.has(status.status));
  const continuedBy = detail.data?.continued_by ?? null;
  // The text stream opens at once, before the thread is read, so the first words of a run
  // that just started are not missed; finals already in the thread are shown once.
  const text = useRunText(runId, -1, !ended);
  const messages = thread.data ? mergeMessages(thread.data.messages, text.finals) : text.finals;
  const liveText = ended ? null : pendingWords(text, messages, runId);

  useEffect(() => {
    // Another run continued this thread (here or elsewhere): follow the thread's last run.
    if (continuedBy) {
      void navigate(`/chat/${encodeURIComponent(agent)}/${encodeURIComponent(continuedBy)}`, {
        replace: true,
      });
    }
  }, [agent, continuedBy, navigate]);

  return (
    <>
      <ErrorNote message={thread.data ? null : thread.error} />
      <Conversation messages={messages} liveText={liveText} />
      {status?.waiting === "approval" && (
        <PendingApprovals
          runId={runId}
          callIds={status.waiting_for}
          named={detail.data?.approvals}
          refresh={status.last_seq}
        />
      )}
      {status?.questions.map((q) => <QuestionCard key={q.call_id} runId={runId} question={q} />)}
      <div className="chat-meta">
        <span>
          Run{" "}
          <Link data-testid="chat-run-link" to={`/runs/${encodeURIComponent(runId)}`}>
            <InertText className="mono" text={runId} oneLine />
          </Link>
        </span>
        {status && (
          <span>
            <StatusBadge status={status.status} testId="chat-status" />
            {status.waiting && <span className="muted"> waiting for {status.waiting}</span>}
          </span>
        )}
        {records.live && <span className="badge badge-live">live</span>}
        {status?.error && <InertText className="error-text" text={`${status.failure_reason ?? "error"}: ${status.error}`} />}
      </div>
      <ErrorNote message={detail.data ? null : detail.error} />
    </>
  );
}
