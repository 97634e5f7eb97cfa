// The runs list: filters in the query string, pages by cursor (the cursors of the pages
// before are kept in the history entry, for "previous"), search by run id, stuck runs marked.

import { useCallback, useEffect, useState } from "react";
import { Link, useLocation, useNavigate, useSearchParams } from "react-router";
import { listAgents, listRuns } from "../api/client";
import { RUN_STATUSES, type RunSummary } from "../api/types";
import { ErrorNote } from "../components/ErrorNote";
import { InertText } from "../components/InertText";
import { StatusBadge } from "../components/StatusBadge";
import { formatTime } from "../format/duration";
import { shortVersion } from "../format/version";
import { useResource } from "../hooks/useResource";
import { inert } from "../inert";
import {
  parseRunsQuery,
  type RunsQuery,
  runsApiParams,
  runsSearchParams,
  type WaitingFilter,
  withFilter,
} from "./runsQuery";

/** How often the list reloads by itself, so statuses stay current. */
const REFRESH_MS = 5000;

interface PageState {
  prev?: string[];
}

export function RunsPage() {
  const [search] = useSearchParams();
  const location = useLocation();
  const navigate = useNavigate();
  const query = parseRunsQuery(search);
  const key = canonicalSearch(search);
  const prev = (location.state as PageState | null)?.prev ?? [];
  const tick = useTicker(REFRESH_MS);

  const load = useCallback(() => listRuns(runsApiParams(parseRunsQuery(new URLSearchParams(key)))), [key]);
  const { data, error } = useResource(load, tick);
  const agents = useResource(listAgents);

  const go = (next: RunsQuery, state: PageState = {}) => {
    const text = runsSearchParams(next).toString();
    void navigate({ pathname: "/runs", search: text ? `?${text}` : "" }, { state });
  };
  const filter = (change: Partial<RunsQuery>) => go(withFilter(query, change));

  const nextPage = () => {
    if (data?.next_cursor) go({ ...query, cursor: data.next_cursor }, { prev: [...prev, query.cursor] });
  };
  const prevPage = () => {
    const earlier = [...prev];
    const cursor = earlier.pop() ?? "";
    go({ ...query, cursor }, { prev: earlier });
  };

  return (
    <div>
      <h1>Runs</h1>
      <div className="filters">
        <label>
          Agent
          <select data-testid="runs-filter-agent" value={query.agent} onChange={(e) => filter({ agent: e.target.value })}>
            <option value="">any</option>
            {(agents.data ?? []).map((a) => (
              <option key={a.name} value={a.name}>
                {inert(a.name, { oneLine: true })}
              </option>
            ))}
            {query.agent && !(agents.data ?? []).some((a) => a.name === query.agent) && (
              <option value={query.agent}>{inert(query.agent, { oneLine: true })}</option>
            )}
          </select>
        </label>
        <label>
          Status
          <select data-testid="runs-filter-status" value={query.status} onChange={(e) => filter({ status: e.target.value })}>
            <option value="">any</option>
            {RUN_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Waiting for
          <select
            data-testid="runs-filter-waiting"
            value={query.waiting}
            onChange={(e) => filter({ waiting: e.target.value as WaitingFilter })}
          >
            <option value="">—</option>
            <option value="any">anything</option>
            <option value="approval">approval</option>
            <option value="question">question</option>
          </select>
        </label>
        <label className="check">
          <input type="checkbox" data-testid="runs-filter-failed" checked={query.failed} onChange={(e) => filter({ failed: e.target.checked })} />
          failed
        </label>
        <label className="check">
          <input type="checkbox" data-testid="runs-filter-stuck" checked={query.stuck} onChange={(e) => filter({ stuck: e.target.checked })} />
          stuck
        </label>
        <input
          key={query.q}
          data-testid="runs-search"
          type="search"
          placeholder="Run id or prefix, Enter"
          defaultValue={query.q}
          onKeyDown={(e) => {
            if (e.key === "Enter") filter({ q: e.currentTarget.value.trim() });
          }}
        />
      </div>
      <ErrorNote message={error} />
      {data && data.items.length === 0 && (
        <p className="empty" data-testid="runs-empty">
          No runs match these filters.
        </p>
      )}
      {data && data.items.length > 0 && <RunsTable runs={data.items} />}
      <div className="pager">
        <button type="button" data-testid="runs-prev-page" disabled={!query.cursor} onClick={prevPage}>
          ← Previous
        </button>
        <span className="muted">page {prev.length + 1}</span>
        <button type="button" data-testid="runs-next-page" disabled={!data?.next_cursor} onClick={nextPage}>
          Next →
        </button>
      </div>
    </div>
  );
}

function RunsTable({ runs }: { runs: RunSummary[] }) {
  return (
    <table className="grid">
      <thead>
        <tr>
          <th>run</th>
          <th>agent</th>
          <th>version</th>
          <th>status</th>
          <th>attempt</th>
          <th>created</th>
          <th>updated</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((run) => (
          <tr key={run.run_id} data-testid="run-row" data-run-id={run.run_id} data-status={run.status}>
            <td className="mono">
              <Link to={`/runs/${encodeURIComponent(run.run_id)}`}>
                <InertText text={run.run_id} oneLine />
              </Link>
              {run.parent_run_id && <span className="muted"> (child)</span>}
            </td>
            <td>
              <InertText text={run.agent} oneLine />
            </td>
            <td className="mono" title={inert(run.spec_version, { oneLine: true })}>
              {inert(shortVersion(run.spec_version), { oneLine: true })}
            </td>
            <td>
              <StatusBadge status={run.status} />
              {run.waiting && <span className="muted"> for {run.waiting}</span>}
              {run.stuck && (
                <span
                  className="badge badge-stuck"
                  data-testid="stuck-badge"
                  title={inert(`${run.stuck.reason}: ${run.stuck.detail}`, { oneLine: true })}
                >
                  stuck
                </span>
              )}
            </td>
            <td className="num">{run.attempt}</td>
            <td>{formatTime(run.created_at)}</td>
            <td>{formatTime(run.updated_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The filters of a query string, written the one way (a reload of the same filters is the same
 * key, however the URL spelled them). */
function canonicalSearch(search: URLSearchParams): string {
  return runsSearchParams(parseRunsQuery(search)).toString();
}

/** A number that goes up every `ms` milliseconds. */
function useTicker(ms: number): number {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setTick((n) => n + 1), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return tick;
}
