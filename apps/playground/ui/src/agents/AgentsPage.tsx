// The published agents and workflows.

import { Link } from "react-router";
import { listAgents } from "../api/client";
import { ErrorNote } from "../components/ErrorNote";
import { InertText } from "../components/InertText";
import { formatTime } from "../format/duration";
import { shortVersion } from "../format/version";
import { inert } from "../inert";
import { useResource } from "../hooks/useResource";

export function AgentsPage() {
  const { data, error } = useResource(listAgents);
  return (
    <div>
      <div className="page-head">
        <h1>Agents</h1>
        <Link className="button primary" to="/agents/new">
          New agent
        </Link>
      </div>
      <ErrorNote message={error} />
      {data && data.length === 0 && <p className="empty">No agent is published yet.</p>}
      {data && data.length > 0 && (
        <table className="grid">
          <thead>
            <tr>
              <th>name</th>
              <th>kind</th>
              <th>latest version</th>
              <th>versions</th>
              <th>published</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {data.map((agent) => (
              <tr key={agent.name} data-testid="agent-row" data-name={agent.name}>
                <td>
                  <Link to={`/agents/${encodeURIComponent(agent.name)}`}>
                    <InertText text={agent.name} oneLine />
                  </Link>
                </td>
                <td>{agent.kind}</td>
                <td className="mono" title={inert(agent.latest_version, { oneLine: true })}>
                  {inert(shortVersion(agent.latest_version), { oneLine: true })}
                </td>
                <td className="num">{agent.versions}</td>
                <td>{formatTime(agent.published_at)}</td>
                <td>
                  <Link data-testid="chat-link" to={`/chat/${encodeURIComponent(agent.name)}`}>
                    Chat
                  </Link>{" "}
                  ·{" "}
                  <Link to={`/runs?agent=${encodeURIComponent(agent.name)}`}>Runs</Link>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
