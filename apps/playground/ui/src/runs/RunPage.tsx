// One run: its status, agent and version, the actions, and the tabs timeline, log, report and
// (for a workflow run) workflow, in ?tab=. It follows the run live over /events.

import { useCallback } from "react";
import { Link, useParams, useSearchParams } from "react-router";
import { getRun } from "../api/client";
import { type RunDetail, TERMINAL_STATUSES } from "../api/types";
import { ErrorNote } from "../components/ErrorNote";
import { InertText } from "../components/InertText";
import { StatusBadge } from "../components/StatusBadge";
import { useResource } from "../hooks/useResource";
import { inert } from "../inert";
import { useRunRecords } from "../live/useRunRecords";
import { LogList } from "../log/LogList";
import { ReportTab } from "../report/ReportTab";
import { TimelineTab } from "../timeline/TimelineTab";
import { WorkflowTab } from "../workflow/WorkflowTab";
import { PendingApprovals } from "../chat/PendingApprovals";
import { QuestionCard } from "../chat/QuestionCard";
import { RunActions } from "./RunActions";

const TABS = ["timeline", "log", "report", "workflow"] as const;
type Tab = (typeof TABS)[number];

export function RunRoute() {
  const { runId = "" } = useParams();
  return <RunPage key={runId} runId={runId} />;
}

function RunPage({ runId }: { runId: string }) {
  const [search, setSearch] = useSearchParams();
  const live = useRunRecords(runId);
  const load = useCallback(() => getRun(runId), [runId]);
  const { data: detail, error } = useResource(load, live.changes, 500);
  const asked = search.get("tab") as Tab | null;
  const isWorkflow = detail?.kind === "workflow";
  const tab: Tab = asked && TABS.includes(asked) && (asked !== "workflow" || isWorkflow) ? asked : "timeline";
  const status = detail?.status.status ?? "";
  const ended = TERMINAL_STATUSES.has(status) || live.ended !== null;

  const pick = (next: Tab) => {
    const params = new URLSearchParams(search);
    params.set("tab", next);
    setSearch(params, { replace: true });
  };

  return (
    <div>
      <h1 className="run-title">
        Run <InertText className="mono" text={runId} oneLine />
        {live.live && (
          <span className="badge badge-live" data-testid="run-live">
            live
          </span>
        )}
      </h1>
      <ErrorNote message={error && !detail ? error : null} />
      <ErrorNote message={live.error} />
      {detail && <RunHeader detail={detail} />}
      {detail && !ended && <WaitingForPerson runId={runId} detail={detail} />}
      {detail && !ended && <RunActions runId={runId} ended={ended} />}
      <nav className="tabs">
        {TABS.filter((t) => t !== "workflow" || isWorkflow).map((t) => (
          <button
            type="button"
            key={t}
            data-testid={`tab-${t}`}
            className={t === tab ? "tab active" : "tab"}
            aria-selected={t === tab}
            onClick={() => pick(t)}
          >
            {t}
          </button>
        ))}
      </nav>
      <div className="tab-body">
        {tab === "timeline" && <TimelineTab runId={runId} changes={live.changes} />}
        {tab === "log" && (
          <LogList
            records={live.records}
            shown={live.shown}
            lastSeq={live.lastSeq}
            hasMore={live.hasMore}
            loading={live.loading}
            loadMore={live.loadMore}
          />
        )}
        {tab === "report" && <ReportTab runId={runId} changes={live.changes} />}
        {tab === "workflow" && isWorkflow && <WorkflowTab runId={runId} changes={live.changes} ended={ended} />}
      </div>
    </div>
  );
}

/** The approvals and answers the run waits for, to give here as in the chat. */
function WaitingForPerson({ runId, detail }: { runId: string; detail: RunDetail }) {
  const status = detail.status;
  return (
    <>
      {status.waiting === "approval" && (
        <PendingApprovals runId={runId} callIds={status.waiting_for} named={detail.approvals} refresh={status.last_seq} />
      )}
      {status.questions.map((q) => (
        <QuestionCard key={q.call_id} runId={runId} question={q} />
      ))}
    </>
  );
}

function RunHeader({ detail }: { detail: RunDetail }) {
  const { summary, status } = detail;
  return (
    <section className="card run-header">
      <dl className="facts">
        <dt>status</dt>
        <dd>
          <StatusBadge status={status.status} testId="run-status" />
          {status.waiting && <span className="muted"> waiting for {status.waiting}</span>}
          {summary.stuck && (
            <span className="badge badge-stuck" title={inert(summary.stuck.detail, { oneLine: true })}>
              stuck ({summary.stuck.reason})
            </span>
          )}
        </dd>
        <dt>agent</dt>
        <dd>
          <Link data-testid="run-agent" to={`/agents/${encodeURIComponent(summary.agent)}`}>
            <InertText text={summary.agent} oneLine />
          </Link>
          <span className="muted"> ({detail.kind})</span>
        </dd>
        <dt>version</dt>
        <dd className="mono" data-testid="run-version">
          <InertText text={summary.spec_version} oneLine />
        </dd>
        <dt>progress</dt>
        <dd>
          {status.turns} {status.turns === 1 ? "turn" : "turns"} · {status.model_calls} model calls · {status.tool_calls} tool calls · attempt{" "}
          {status.attempt} · last seq {status.last_seq}
        </dd>
        {(detail.continues || detail.continued_by) && (
          <>
            <dt>thread</dt>
            <dd>
              {detail.continues && (
                <Link to={`/runs/${encodeURIComponent(detail.continues)}`}>continues a run</Link>
              )}
              {detail.continues && detail.continued_by && " · "}
              {detail.continued_by && (
                <Link to={`/runs/${encodeURIComponent(detail.continued_by)}`}>continued by a run</Link>
              )}
              {" · "}
              <Link to={`/chat/${encodeURIComponent(summary.agent)}/${encodeURIComponent(summary.run_id)}`}>open chat</Link>
            </dd>
          </>
        )}
        {status.error && (
          <>
            <dt>error</dt>
            <dd className="error-text">
              <InertText text={`${status.failure_reason ?? "error"}: ${status.error}`} />
            </dd>
          </>
        )}
      </dl>
    </section>
  );
}
