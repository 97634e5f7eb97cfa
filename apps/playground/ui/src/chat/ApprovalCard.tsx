// A tool call that waits for a person's approval: approve it, deny it, or approve it with
// edited arguments.

import { useState } from "react";
import { decideApproval, errorMessage } from "../api/client";
import type { JsonObject, JsonValue } from "../api/types";
import { ErrorNote } from "../components/ErrorNote";
import { InertText, JsonBlock } from "../components/InertText";

export interface PendingCall {
  call_id: string;
  /** The tool's name; null while the report that names it has not loaded. */
  name: string | null;
  arguments: JsonValue;
  rule: string | null;
}

/** Who decides, as the run's log records it. */
const DECIDER = "playground";

export function ApprovalCard({ runId, call }: { runId: string; call: PendingCall }) {
  const [edited, setEdited] = useState(() => argumentsText(call.arguments));
  const [busy, setBusy] = useState(false);
  const [decided, setDecided] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const decide = (approve: boolean, args: JsonObject | null) => {
    setBusy(true);
    setError(null);
    decideApproval(runId, call.call_id, { approve, by: DECIDER, note: null, arguments: args })
      .then(() => setDecided(approve ? (args ? "approved with edited arguments" : "approved") : "denied"))
      .catch((reason: unknown) => setError(errorMessage(reason)))
      .finally(() => setBusy(false));
  };

  const approveEdited = () => {
    const parsed = parseArguments(edited);
    if (typeof parsed === "string") setError(parsed);
    else decide(true, parsed);
  };

  return (
    <div className="card approval" data-testid="approval-card" data-call-id={call.call_id}>
      <h4>
        Approval needed: <InertText testId="approval-tool" text={call.name ?? "(loading)"} oneLine />
      </h4>
      {call.rule && <InertText className="muted" text={`rule: ${call.rule}`} />}
      <JsonBlock value={call.arguments} testId="approval-arguments" />
      {decided ? (
        <p className="muted">{decided}</p>
      ) : (
        <>
          <div className="action-row">
            <button type="button" data-testid="approve-button" disabled={busy} onClick={() => decide(true, null)}>
              Approve
            </button>
            <button type="button" className="danger" data-testid="deny-button" disabled={busy} onClick={() => decide(false, null)}>
              Deny
            </button>
          </div>
          <label className="edit-label">
            Or approve with these arguments:
            <textarea
              data-testid="edit-arguments"
              rows={4}
              spellCheck={false}
              value={edited}
              onChange={(e) => setEdited(e.target.value)}
            />
          </label>
          <button type="button" data-testid="approve-edited-button" disabled={busy} onClick={approveEdited}>
            Approve with these arguments
          </button>
        </>
      )}
      <ErrorNote message={error} />
    </div>
  );
}

function argumentsText(value: JsonValue): string {
  if (typeof value === "string") return value; // the model's text, not JSON
  return JSON.stringify(value ?? {}, null, 2);
}

/** The edited arguments as an object, or why they are not one. */
export function parseArguments(text: string): JsonObject | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `The arguments are not JSON: ${errorMessage(error)}`;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return "The arguments must be a JSON object.";
  }
  return value as JsonObject;
}
