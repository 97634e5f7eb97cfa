// The approval cards of the calls a run waits on. The run's detail names each call's tool and
// arguments where the server gives them; otherwise the report does.

import { useCallback } from "react";
import { getReport } from "../api/client";
import type { PendingApproval } from "../api/types";
import { useResource } from "../hooks/useResource";
import { ApprovalCard, type PendingCall } from "./ApprovalCard";

interface PendingApprovalsProps {
  runId: string;
  callIds: string[];
  /** The calls as the run's detail names them, when it does. */
  named: PendingApproval[] | undefined;
  /** Reload the report when this changes (the run's last seq). */
  refresh: number;
}

export function PendingApprovals({ runId, callIds, named, refresh }: PendingApprovalsProps) {
  if (named && callIds.every((id) => named.some((a) => a.call_id === id))) {
    return (
      <>
        {named.map((a) => (
          <ApprovalCard
            key={a.call_id}
            runId={runId}
            call={{ call_id: a.call_id, name: a.tool, arguments: a.arguments, rule: a.rule }}
          />
        ))}
      </>
    );
  }
  return <ReportedApprovals runId={runId} callIds={callIds} refresh={refresh} />;
}

function ReportedApprovals({ runId, callIds, refresh }: Omit<PendingApprovalsProps, "named">) {
  const load = useCallback(() => getReport(runId), [runId]);
  const report = useResource(load, refresh);
  const calls: PendingCall[] = callIds.map((callId) => {
    const found = report.data?.tool_calls.find((c) => c.call_id === callId);
    return {
      call_id: callId,
      name: found?.name ?? null,
      arguments: found?.arguments ?? null,
      rule: found?.approval_rule ?? null,
    };
  });
  return (
    <>
      {calls.map((call) => (
        <ApprovalCard key={`${call.call_id}:${call.name ?? ""}`} runId={runId} call={call} />
      ))}
    </>
  );
}
