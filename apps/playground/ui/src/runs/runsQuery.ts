// The runs list's filters, kept in the query string so a filtered list can be linked to and
// reloaded: agent, status, waiting, failed, stuck, q, cursor.

import type { RunListParams } from "../api/client";

export type WaitingFilter = "" | "any" | "approval" | "question";

export interface RunsQuery {
  agent: string;
  status: string;
  waiting: WaitingFilter;
  failed: boolean;
  stuck: boolean;
  q: string;
  cursor: string;
}

export const EMPTY_QUERY: RunsQuery = {
  agent: "",
  status: "",
  waiting: "",
  failed: false,
  stuck: false,
  q: "",
  cursor: "",
};

const WAITING: readonly WaitingFilter[] = ["", "any", "approval", "question"];

export function parseRunsQuery(search: URLSearchParams): RunsQuery {
  const waiting = search.get("waiting") ?? "";
  return {
    agent: search.get("agent") ?? "",
    status: search.get("status") ?? "",
    waiting: (WAITING as readonly string[]).includes(waiting) ? (waiting as WaitingFilter) : "",
    failed: search.get("failed") === "true",
    stuck: search.get("stuck") === "true",
    q: search.get("q") ?? "",
    cursor: search.get("cursor") ?? "",
  };
}

/** The query string of `query`: only the filters that are set, in a fixed order. */
export function runsSearchParams(query: RunsQuery): URLSearchParams {
  const search = new URLSearchParams();
  if (query.agent) search.set("agent", query.agent);
  if (query.status) search.set("status", query.status);
  if (query.waiting) search.set("waiting", query.waiting);
  if (query.failed) search.set("failed", "true");
  if (query.stuck) search.set("stuck", "true");
  if (query.q) search.set("q", query.q);
  if (query.cursor) search.set("cursor", query.cursor);
  return search;
}

/** The API's parameters for `query` (the same names as the page's query string). */
export function runsApiParams(query: RunsQuery, limit = 50): RunListParams {
  const params: RunListParams = { limit };
  if (query.agent) params.agent = query.agent;
  if (query.status) params.status = query.status;
  if (query.waiting) params.waiting = query.waiting;
  if (query.failed) params.failed = true;
  if (query.stuck) params.stuck = true;
  if (query.q) params.q = query.q;
  if (query.cursor) params.cursor = query.cursor;
  return params;
}

/** `query` with one filter changed: a new filter starts again at the first page. */
export function withFilter(query: RunsQuery, change: Partial<RunsQuery>): RunsQuery {
  return { ...query, ...change, cursor: "" };
}
