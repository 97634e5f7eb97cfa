// The run page's workflow tab.

import { useCallback, useState } from "react";
import { useNavigate } from "react-router";
import { errorMessage, getWorkflow, replayRun } from "../api/client";
import { ErrorNote } from "../components/ErrorNote";
import { useResource } from "../hooks/useResource";
import { WorkflowTree } from "./WorkflowTree";

interface WorkflowTabProps {
  runId: string;
  changes: number;
  ended: boolean;
}

export function WorkflowTab({ runId, changes, ended }: WorkflowTabProps) {
  const load = useCallback(() => getWorkflow(runId), [runId]);
  const { data, error } = useResource(load, changes, 1000);
  const [replayError, setReplayError] = useState<string | null>(null);
  const navigate = useNavigate();

  const replay = (stepKey: string) => {
    setReplayError(null);
    replayRun(runId, stepKey)
      .then((started) => navigate(`/runs/${encodeURIComponent(started.run_id)}?tab=workflow`))
      .catch((reason: unknown) => setReplayError(errorMessage(reason)));
  };

  if (error && !data) return <ErrorNote message={error} />;
  if (!data) return <p className="muted">Loading the steps…</p>;
  return (
    <>
      <ErrorNote message={replayError ?? error} />
      <WorkflowTree view={data} canReplay={ended} onReplay={replay} />
    </>
  );
}
