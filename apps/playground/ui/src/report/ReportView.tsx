// What a run used and cost, its timings and its tool calls (GET /api/runs/:id/report).
// A cost the server does not know is "unknown", never 0.

import type { Report, Totals, ToolCallReport, Usage } from "../api/types";
import { InertText, JsonBlock } from "../components/InertText";
import { describeCostSource, formatCost } from "../format/cost";
import { formatDuration, formatTime, secondsBetween } from "../format/duration";

const USAGE_KINDS: (keyof Usage)[] = [
  "input",
  "output",
  "cache_read",
  "cache_write",
  "cache_write_1h",
  "reasoning",
];

export function ReportView({ report }: { report: Report }) {
  return (
    <div className="report" data-testid="report">
      <div className="cards">
        <UsageCard totals={report.totals} />
        <CostCard totals={report.totals} />
        <TimingsCard report={report} />
      </div>
      {report.error && (
        <p className="error-note">
          {report.failure_reason ? `${report.failure_reason}: ` : ""}
          <InertText text={report.error} />
        </p>
      )}
      <h3>Tool calls ({report.tool_calls.length})</h3>
      <ToolCallTable calls={report.tool_calls} />
    </div>
  );
}

function UsageCard({ totals }: { totals: Totals }) {
  const sources = Object.entries(totals.usage_sources);
  return (
    <section className="card">
      <h3>Usage</h3>
      <table className="compact" data-testid="report-usage">
        <tbody>
          {USAGE_KINDS.map((kind) => (
            <tr key={kind} data-kind={kind}>
              <th>{kind}</th>
              <td className="num">{(totals.usage[kind] ?? 0).toLocaleString("en-US")}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="muted">
        {sources.length
          ? sources.map(([source, n]) => `${n} call${n === 1 ? "" : "s"} ${source}`).join(", ")
          : "no model call answered"}
        {totals.failed_calls ? ` · ${totals.failed_calls} failed` : ""}
      </p>
    </section>
  );
}

function CostCard({ totals }: { totals: Totals }) {
  const cost = totals.cost;
  const unpriced = totals.unpriced_calls;
  return (
    <section className="card">
      <h3>Cost</h3>
      <p className="big" data-testid="report-cost" data-known={cost ? "true" : "false"}>
        {formatCost(cost)}
        {cost && <span className="muted"> · {describeCostSource(cost)}</span>}
      </p>
      <p data-testid="report-unpriced" data-count={unpriced}>
        {unpriced === 0
          ? "every model call is priced"
          : `${unpriced} unpriced model call${unpriced === 1 ? "" : "s"}: the total is unknown`}
      </p>
    </section>
  );
}

function TimingsCard({ report }: { report: Report }) {
  const seconds = secondsBetween(report.started_at, report.ended_at);
  return (
    <section className="card">
      <h3>Timings</h3>
      <table className="compact" data-testid="report-timings">
        <tbody>
          <tr>
            <th>started</th>
            <td>{formatTime(report.started_at)}</td>
          </tr>
          <tr>
            <th>ended</th>
            <td>{report.ended_at ? formatTime(report.ended_at) : "not yet"}</td>
          </tr>
          <tr>
            <th>duration</th>
            <td>{seconds === null ? "running" : formatDuration(seconds)}</td>
          </tr>
          <tr>
            <th>attempts</th>
            <td>{report.attempts}</td>
          </tr>
          <tr>
            <th>turns</th>
            <td>
              {report.turns} {report.turns === 1 ? "turn" : "turns"}, {report.model_calls} model calls
            </td>
          </tr>
        </tbody>
      </table>
    </section>
  );
}

function ToolCallTable({ calls }: { calls: ToolCallReport[] }) {
  if (calls.length === 0) return <p className="muted">No tool calls.</p>;
  return (
    <table className="grid">
      <thead>
        <tr>
          <th>call</th>
          <th>tool</th>
          <th>outcome</th>
          <th>arguments</th>
          <th>result or error</th>
          <th>approval</th>
        </tr>
      </thead>
      <tbody>
        {calls.map((call) => (
          <tr key={call.call_id} data-testid="report-tool-call" data-outcome={call.outcome}>
            <td className="mono">
              <InertText text={call.call_id} oneLine />
            </td>
            <td>
              <InertText text={call.name} oneLine />
            </td>
            <td>
              <span className={`outcome outcome-${call.outcome}`}>{call.outcome}</span>
              {call.starts && call.starts > 1 ? ` (${call.starts} starts)` : ""}
            </td>
            <td>
              <JsonBlock value={call.arguments} limit={2000} />
            </td>
            <td>
              {call.outcome === "failed" ? (
                <InertText text={`${call.reason ?? "error"}: ${call.error ?? ""}`} limit={2000} />
              ) : (
                <JsonBlock value={call.result} limit={2000} />
              )}
            </td>
            <td>{approvalText(call)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function approvalText(call: ToolCallReport) {
  if (!call.approval_rule) return "—";
  if (call.approved === null || call.approved === undefined) {
    return <InertText text={`waiting (${call.approval_rule})`} />;
  }
  const verdict = call.approved ? "approved" : "denied";
  return <InertText text={`${verdict} by ${call.decided_by ?? "?"} (${call.approval_rule})`} />;
}
