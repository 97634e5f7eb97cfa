// Publishing a new agent or workflow, starting from the server's examples.

import { useState } from "react";
import { Link } from "react-router";
import { getSpecExamples } from "../api/client";
import type { PublishResult } from "../api/types";
import { ErrorNote } from "../components/ErrorNote";
import { InertText } from "../components/InertText";
import { useResource } from "../hooks/useResource";
import { SpecEditor } from "./SpecEditor";

export function NewAgentPage() {
  const { data, error } = useResource(getSpecExamples);
  const [published, setPublished] = useState<PublishResult | null>(null);
  const examples = data
    ? { agent: JSON.stringify(data.agent, null, 2), workflow: JSON.stringify(data.workflow, null, 2) }
    : null;
  return (
    <div>
      <h1>New agent</h1>
      <p className="muted">
        Write the spec as JSON. Publishing the same spec again changes nothing; a changed spec is a
        new version.
      </p>
      <ErrorNote message={error} />
      {examples && (
        <SpecEditor initialKind="agent" initialText={examples.agent} examples={examples} onPublished={setPublished} />
      )}
      {published && (
        <p>
          <Link to={`/agents/${encodeURIComponent(published.name)}`}>
            See the versions of <InertText text={published.name} oneLine />
          </Link>
        </p>
      )}
    </div>
  );
}
