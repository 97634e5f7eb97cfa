// One agent: its versions, the diff between any two, and publishing a new version from the
// latest.

import { useCallback, useState } from "react";
import { Link, useParams } from "react-router";
import { diffAgent, getAgent } from "../api/client";
import type { AgentDetail } from "../api/types";
import { ErrorNote } from "../components/ErrorNote";
import { InertText } from "../components/InertText";
import { formatTime } from "../format/duration";
import { useResource } from "../hooks/useResource";
import { inert } from "../inert";
import { DiffView } from "./DiffView";
import { SpecEditor } from "./SpecEditor";

export function AgentHistoryRoute() {
  const { name = "" } = useParams();
  return <AgentHistoryPage key={name} name={name} />;
}

function AgentHistoryPage({ name }: { name: string }) {
  const load = useCallback(() => getAgent(name), [name]);
  const { data, error, reload } = useResource(load);
  return (
    <div>
      <div className="page-head">
        <h1>
          <InertText text={name} oneLine />
        </h1>
        <Link className="button primary" data-testid="chat-link" to={`/chat/${encodeURIComponent(name)}`}>
          Chat
        </Link>
      </div>
      <ErrorNote message={error} />
      {data && <History key={data.versions[0]?.version ?? ""} agent={data} />}
      {data && data.versions.length > 0 && (
        <section>
          <h2>Publish a new version</h2>
          <SpecEditor
            initialKind={data.kind}
            kindLocked
            initialText={JSON.stringify(data.versions[0]!.spec, null, 2)}
            onPublished={reload}
          />
        </section>
      )}
    </div>
  );
}

function History({ agent }: { agent: AgentDetail }) {
  const versions = agent.versions;
  const [from, setFrom] = useState(versions[1]?.version ?? versions[0]?.version ?? "");
  const [to, setTo] = useState(versions[0]?.version ?? "");
  return (
    <>
      <h2>Versions</h2>
      <table className="grid">
        <thead>
          <tr>
            <th>version</th>
            <th>published</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {versions.map((v, i) => (
            <tr key={v.version} data-testid="version-row" data-version={v.version}>
              <td className="mono">
                <InertText text={v.version} oneLine />
                {i === 0 && <span className="badge">latest</span>}
              </td>
              <td>{formatTime(v.published_at)}</td>
              <td>
                <button type="button" className="link" onClick={() => setTo(v.version)}>
                  diff to this
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Diff</h2>
      <div className="toolbar">
        <label>
          from
          <VersionSelect testId="diff-from" versions={versions.map((v) => v.version)} value={from} onChange={setFrom} />
        </label>
        <label>
          to
          <VersionSelect testId="diff-to" versions={versions.map((v) => v.version)} value={to} onChange={setTo} />
        </label>
      </div>
      {from && to && <Diff key={`${from}->${to}`} name={agent.name} from={from} to={to} />}
    </>
  );
}

interface VersionSelectProps {
  testId: string;
  versions: string[];
  value: string;
  onChange: (version: string) => void;
}

function VersionSelect({ testId, versions, value, onChange }: VersionSelectProps) {
  return (
    <select data-testid={testId} value={value} onChange={(e) => onChange(e.target.value)}>
      {versions.map((v) => (
        <option key={v} value={v}>
          {inert(v, { oneLine: true })}
        </option>
      ))}
    </select>
  );
}

function Diff({ name, from, to }: { name: string; from: string; to: string }) {
  const load = useCallback(() => diffAgent(name, from, to), [name, from, to]);
  const { data, error } = useResource(load);
  if (error) return <ErrorNote message={error} />;
  if (!data) return <p className="muted">Comparing…</p>;
  return <DiffView changes={data.changes} />;
}
