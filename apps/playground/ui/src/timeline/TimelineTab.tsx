// The run page's timeline tab: /timeline, refreshed while the run is live.

import { useCallback } from "react";
import { getTimeline } from "../api/client";
import { ErrorNote } from "../components/ErrorNote";
import { useResource } from "../hooks/useResource";
import { TimelineChart } from "./TimelineChart";

export function TimelineTab({ runId, changes }: { runId: string; changes: number }) {
  const load = useCallback(() => getTimeline(runId), [runId]);
  const { data, error } = useResource(load, changes, 1000);
  if (error && !data) return <ErrorNote message={error} />;
  if (!data) return <p className="muted">Loading the timeline…</p>;
  return (
    <>
      <ErrorNote message={error} />
      <TimelineChart data={data} />
    </>
  );
}
