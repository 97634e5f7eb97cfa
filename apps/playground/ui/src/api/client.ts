// Typed calls to the playground's HTTP API. Every failure is an `ApiError` that carries the
// server's `detail` (a message naming the run, agent or call; a list of field errors on 422).

import type {
  Accepted,
  AgentDetail,
  AgentSummary,
  Health,
  JsonObject,
  JsonValue,
  LogPage,
  PublishRequest,
  PublishResult,
  Report,
  RunDetail,
  RunPage,
  SendQueue,
  SpecDiff,
  SpecExamples,
  SpecFieldError,
  StartedRun,
  StartRunRequest,
  Thread,
  TimelineData,
  WorkflowView,
} from "./types";

export class ApiError extends Error {
  readonly status: number;
  /** The server's `detail`: a message, or the field errors of a spec that did not validate. */
  readonly detail: unknown;

  constructor(status: number, detail: unknown, what: string) {
    super(describe(status, detail, what));
    this.name = "ApiError";
    this.status = status;
    this.detail = detail;
  }

  /** The field errors of a 422 answer to a publish, or an empty list. */
  fieldErrors(): SpecFieldError[] {
    if (!Array.isArray(this.detail)) return [];
    return this.detail.filter(isFieldError);
  }
}

function isFieldError(value: unknown): value is SpecFieldError {
  if (typeof value !== "object" || value === null) return false;
  const candidate = value as Partial<SpecFieldError>;
  return Array.isArray(candidate.loc) && typeof candidate.msg === "string";
}

function describe(status: number, detail: unknown, what: string): string {
  if (typeof detail === "string" && detail) return detail;
  if (Array.isArray(detail)) {
    const messages = detail.filter(isFieldError).map((e) => `${e.loc.join("/")}: ${e.msg}`);
    if (messages.length) return messages.join("; ");
  }
  return `${what} failed: HTTP ${status}`;
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { method, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers = { ...init.headers, "Content-Type": "application/json" };
    init.body = JSON.stringify(body);
  }
  let response: Response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ApiError(0, `${method} ${path}: the server did not answer (${reason})`, path);
  }
  const text = await response.text();
  let payload: unknown = null;
  if (text) {
    try {
      payload = JSON.parse(text);
    } catch {
      payload = text;
    }
  }
  if (!response.ok) {
    const detail =
      typeof payload === "object" && payload !== null && "detail" in payload
        ? payload.detail
        : payload;
    throw new ApiError(response.status, detail, `${method} ${path}`);
  }
  return payload as T;
}

function query(params: Record<string, string | number | boolean | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === null || value === undefined || value === "" || value === false) continue;
    search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

const enc = encodeURIComponent;

// -- health and agents ---------------------------------------------------------------------

export const getHealth = (): Promise<Health> => call("GET", "/api/health");

export const listAgents = (): Promise<AgentSummary[]> => call("GET", "/api/agents");

export const getSpecExamples = (): Promise<SpecExamples> => call("GET", "/api/agents/examples");

export const publishSpec = (request: PublishRequest): Promise<PublishResult> =>
  call("POST", "/api/agents", request);

export const getAgent = (name: string): Promise<AgentDetail> =>
  call("GET", `/api/agents/${enc(name)}`);

export const diffAgent = (name: string, from: string, to: string): Promise<SpecDiff> =>
  call("GET", `/api/agents/${enc(name)}/diff${query({ from, to })}`);

// -- runs -----------------------------------------------------------------------------------

export interface RunListParams {
  agent?: string;
  status?: string;
  waiting?: string;
  failed?: boolean;
  stuck?: boolean;
  q?: string;
  cursor?: string;
  limit?: number;
}

export const listRuns = (params: RunListParams): Promise<RunPage> =>
  call("GET", `/api/runs${query({ ...params })}`);

export const startRun = (request: StartRunRequest): Promise<StartedRun> =>
  call("POST", "/api/runs", request);

export const getRun = (runId: string): Promise<RunDetail> => call("GET", `/api/runs/${enc(runId)}`);

export const getLog = (runId: string, after: number, limit = 200): Promise<LogPage> =>
  call("GET", `/api/runs/${enc(runId)}/log${query({ after, limit })}`);

export const getReport = (runId: string): Promise<Report> =>
  call("GET", `/api/runs/${enc(runId)}/report`);

export const getTimeline = (runId: string): Promise<TimelineData> =>
  call("GET", `/api/runs/${enc(runId)}/timeline`);

export const getThread = (runId: string): Promise<Thread> =>
  call("GET", `/api/runs/${enc(runId)}/thread`);

export const getWorkflow = (runId: string): Promise<WorkflowView> =>
  call("GET", `/api/runs/${enc(runId)}/workflow`);

export interface Decision {
  approve: boolean;
  by: string;
  note: string | null;
  arguments: JsonObject | null;
}

export const decideApproval = (runId: string, callId: string, decision: Decision) =>
  call<Accepted>("POST", `/api/runs/${enc(runId)}/approvals/${enc(callId)}`, decision);

export const answerQuestion = (runId: string, callId: string, answer: JsonValue) =>
  call<Accepted>("POST", `/api/runs/${enc(runId)}/answers/${enc(callId)}`, { answer });

export const cancelRun = (runId: string, reason: string) =>
  call<Accepted>("POST", `/api/runs/${enc(runId)}/cancel`, { reason });

export const interruptRun = (runId: string, message: string) =>
  call<Accepted>("POST", `/api/runs/${enc(runId)}/interrupt`, { message });

export const sendToRun = (runId: string, message: string, queue: SendQueue) =>
  call<Accepted>("POST", `/api/runs/${enc(runId)}/send`, { message, queue });

export const replayRun = (runId: string, fromStep: string) =>
  call<{ run_id: string }>("POST", `/api/runs/${enc(runId)}/replay`, { from_step: fromStep });

// -- live -----------------------------------------------------------------------------------

export const eventsUrl = (runId: string, after: number): string =>
  `/api/runs/${enc(runId)}/events${query({ after })}`;

export const textUrl = (runId: string, after: number): string =>
  `/api/runs/${enc(runId)}/text${query({ after })}`;

/** A message for any error thrown by a call, for showing to the person. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
