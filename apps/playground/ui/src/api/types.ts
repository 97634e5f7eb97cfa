// The shapes of the playground's HTTP API (apps/playground, prefix /api).
// Timestamps are ISO 8601 strings with a timezone; durations are seconds.

export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

export type JsonObject = { [key: string]: JsonValue };

export type SpecKind = "agent" | "workflow";

export interface Health {
  ok: boolean;
  store: "sqlite" | "postgresql";
  model: string;
  live_text: boolean;
}

// -- agents -------------------------------------------------------------------------------

export interface AgentSummary {
  name: string;
  kind: SpecKind;
  latest_version: string;
  versions: number;
  published_at: string;
}

export interface PublishRequest {
  kind: SpecKind;
  spec: JsonValue;
}

export interface PublishResult {
  name: string;
  kind: SpecKind;
  version: string;
  published_at: string;
  created: boolean;
}

/** One validation error of a spec, as the server reports it (pydantic's shape). */
export interface SpecFieldError {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export interface AgentVersion {
  version: string;
  published_at: string;
  spec: JsonObject;
}

export interface AgentDetail {
  name: string;
  kind: SpecKind;
  versions: AgentVersion[];
}

export type ChangeOp = "added" | "removed" | "changed";

export interface SpecChange {
  path: string;
  op: ChangeOp;
  before: JsonValue;
  after: JsonValue;
}

export interface SpecDiff {
  from: string;
  to: string;
  changes: SpecChange[];
}

export interface SpecExamples {
  agent: JsonObject;
  workflow: JsonObject;
}

// -- runs ---------------------------------------------------------------------------------

export type RunStatusName =
  | "queued"
  | "running"
  | "waiting"
  | "completed"
  | "failed"
  | "cancelled";

export const RUN_STATUSES: readonly RunStatusName[] = [
  "queued",
  "running",
  "waiting",
  "completed",
  "failed",
  "cancelled",
];

export const TERMINAL_STATUSES: ReadonlySet<string> = new Set([
  "completed",
  "failed",
  "cancelled",
]);

export interface Stuck {
  reason: "attempts" | "no_progress";
  detail: string;
}

export interface RunSummary {
  run_id: string;
  agent: string;
  spec_version: string;
  status: RunStatusName;
  waiting: string | null;
  attempt: number;
  parent_run_id: string | null;
  created_at: string;
  updated_at: string;
  lease_expires_at: string | null;
  stuck: Stuck | null;
}

export interface RunPage {
  items: RunSummary[];
  next_cursor: string | null;
}

export interface Question {
  call_id: string;
  question: string;
  options: string[];
}

/** `psych_runtime.RunStatus` as JSON. */
export interface RunStatus {
  run_id: string;
  agent: string;
  status: RunStatusName;
  waiting: "approval" | "external" | "children" | null;
  waiting_for: string[];
  due_at: string | null;
  questions: Question[];
  turns: number;
  model_calls: number;
  tool_calls: number;
  attempt: number;
  last_seq: number;
  failure_reason: string | null;
  error: string | null;
}

/** A call waiting for a person's approval, as the run page's approval card shows it. */
export interface PendingApproval {
  call_id: string;
  tool: string;
  /** Parsed from the model's JSON; its raw text when it is not JSON. */
  arguments: JsonValue;
  rule: string;
}

export interface RunDetail {
  summary: RunSummary;
  status: RunStatus;
  kind: SpecKind;
  continues: string | null;
  continued_by: string | null;
  /** The calls waiting for approval, named (a server may leave it out: the report names them). */
  approvals?: PendingApproval[];
}

export interface StartRunRequest {
  agent: string;
  version?: string;
  message: string;
  continues?: string;
}

export interface StartedRun {
  run_id: string;
  agent: string;
  version: string;
}

/** One entry of a run's log; `body.type` names the record. */
export interface LogRecord {
  run_id: string;
  seq: number;
  attempt: number;
  at: string;
  body: { type: string; [key: string]: JsonValue };
}

export interface LogPage {
  records: LogRecord[];
  next_after: number | null;
  last_seq: number;
}

// -- report -------------------------------------------------------------------------------

export interface Usage {
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
  cache_write_1h?: number;
  reasoning: number;
}

export type CostSource = "provider" | "snapshot" | "override" | "mixed";

/** An exact amount: pydantic writes a Decimal as a string ("0.00042"). */
export interface Cost {
  amount: string | number;
  currency: string;
  source: CostSource;
  as_of?: string | null;
}

export interface Totals {
  usage: Usage;
  usage_sources: Partial<Record<"provider" | "estimated" | "missing", number>>;
  cost: Cost | null;
  unpriced_calls: number;
  failed_calls: number;
}

export type ToolOutcome = "succeeded" | "failed" | "unknown" | "pending";

export interface ToolCallReport {
  call_id: string;
  name: string;
  arguments: JsonValue;
  outcome: ToolOutcome;
  result?: JsonValue;
  result_bytes?: number | null;
  error?: string | null;
  reason?: string | null;
  starts?: number;
  started_at?: string | null;
  ended_at?: string | null;
  approval_rule?: string | null;
  approved?: boolean | null;
  decided_by?: string | null;
  decided_at?: string | null;
  decision_note?: string | null;
  edited_arguments?: JsonValue;
}

export interface Report {
  run_id: string;
  agent: string;
  spec_version: string;
  status: RunStatusName;
  failure_reason?: string | null;
  error?: string | null;
  output?: JsonValue;
  turns: number;
  model_calls: number;
  tool_calls: ToolCallReport[];
  totals: Totals;
  own_totals: Totals;
  children?: string[];
  continues?: string | null;
  compactions?: number;
  attempts: number;
  started_at: string;
  ended_at: string | null;
}

// -- timeline -----------------------------------------------------------------------------

export type BarKind = "model" | "tool" | "wait" | "attempt" | "approval" | "step";

export interface TimelineBar {
  kind: BarKind;
  label: string;
  start: string;
  end: string | null;
  outcome: string | null;
  seq: number;
  end_seq: number | null;
  lane: number;
}

export type MarkKind = "crash" | "unknown" | "signal" | "end";

export interface TimelineMark {
  kind: MarkKind;
  at: string;
  seq: number;
  label: string;
}

export interface TimelineGap {
  start: string;
  end: string;
  seconds: number;
}

export interface TimelineData {
  start: string;
  end: string;
  bars: TimelineBar[];
  marks: TimelineMark[];
  gaps: TimelineGap[];
}

// -- thread -------------------------------------------------------------------------------

export type MessageRole = "user" | "assistant" | "tool";

export interface ThreadMessage {
  role: MessageRole;
  text: string;
  run_id: string;
  seq: number;
  /** The tool of a `tool` message, where the server says it. */
  tool?: string | null;
}

export interface Thread {
  runs: string[];
  messages: ThreadMessage[];
}

/** One event of /api/runs/:id/text (`psych_runtime.TextEvent`). */
export interface TextEvent {
  kind: "final" | "delta" | "discard";
  run_id: string;
  seq: number;
  text: string;
}

// -- workflow -----------------------------------------------------------------------------

export interface StepFailure {
  kind: string;
  error: string;
  step: string;
}

export interface StepTry {
  key: string;
  name: string;
  attempt: number;
  outcome: string;
  call_id?: string | null;
  input?: JsonValue;
  output?: JsonValue;
  error?: string | null;
  started_at?: string | null;
  ended_at?: string | null;
}

export interface ItemView {
  key: string;
  index: number;
  status: string;
  item?: JsonValue;
  output?: JsonValue;
  failure?: StepFailure | null;
  started_at?: string | null;
  ended_at?: string | null;
  steps: StepView[];
}

export interface StepView {
  key: string;
  name: string;
  kind: string;
  status: string;
  attempts: number;
  input?: JsonValue;
  output?: JsonValue;
  failure?: StepFailure | null;
  started_at?: string | null;
  ended_at?: string | null;
  waiting_for?: string | null;
  child_run_id?: string | null;
  branch?: string | null;
  steps: StepView[];
  items: ItemView[];
  tries: StepTry[];
}

export interface WorkflowView {
  run_id: string;
  workflow: string;
  spec_version: string;
  status: RunStatusName;
  output?: JsonValue;
  error?: string | null;
  replay_of?: string | null;
  from_step?: string | null;
  breakpoints?: string[];
  step_mode?: boolean;
  steps: StepView[];
}

export type SendQueue = "steer" | "follow_up" | "next_run";

export interface Accepted {
  seq: number;
}
