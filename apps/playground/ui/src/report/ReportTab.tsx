// The run page's report tab: /report, refreshed while the run is live.

import { useCallback } from "react";
import { getReport } from "../api/client";
import { ErrorNote } from "../components/ErrorNote";
import { useResource } from "../hooks/useResource";
import { ReportView } from "./ReportView";

export function ReportTab({ runId, changes }: { runId: string; changes: number }) {
  const load = useCallback(() => getReport(runId), [runId]);
  const { data, error } = useResource(load, changes, 1000);
  if (error && !data) return <ErrorNote message={error} />;
  if (!data) return <p className="muted">Loading the report…</p>;
  return (
    <>
      <ErrorNote message={error} />
      <ReportView report={data} />
    </>
  );
}
