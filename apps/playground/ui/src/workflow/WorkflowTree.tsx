// A workflow run's step tree (GET /api/runs/:id/workflow), with replay from any step of an
// ended run: POST /replay starts a new run from that step, and the page follows it.

import { useState } from "react";
import { Link } from "react-router";
import type { ItemView, StepView, WorkflowView } from "../api/types";
import { QuestionCard } from "../chat/QuestionCard";
import { InertText, JsonBlock } from "../components/InertText";
import { StatusBadge } from "../components/StatusBadge";
import { inert } from "../inert";

interface WorkflowTreeProps {
  view: WorkflowView;
  /** Replay is offered once the run has ended. */
  canReplay: boolean;
  onReplay: (stepKey: string) => void;
}

export function WorkflowTree({ view, canReplay, onReplay }: WorkflowTreeProps) {
  const runId = view.run_id;
  return (
    <div className="workflow" data-testid="workflow-tree">
      <p className="muted">
        <InertText text={`${view.workflow} ${view.spec_version}`} oneLine />
        {view.replay_of && (
          <InertText text={` · replays ${view.replay_of} from ${view.from_step ?? "?"}`} oneLine />
        )}
      </p>
      <StepList runId={runId} steps={view.steps} canReplay={canReplay} onReplay={onReplay} />
    </div>
  );
}

interface StepListProps {
  runId: string;
  steps: StepView[];
  canReplay: boolean;
  onReplay: (stepKey: string) => void;
}

function StepList({ runId, steps, canReplay, onReplay }: StepListProps) {
  if (steps.length === 0) return null;
  return (
    <ul className="steps">
      {steps.map((step) => (
        <StepNode key={step.key} runId={runId} step={step} canReplay={canReplay} onReplay={onReplay} />
      ))}
    </ul>
  );
}

function StepNode({ runId, step, canReplay, onReplay }: { step: StepView } & Omit<StepListProps, "steps">) {
  const [open, setOpen] = useState(false);
  return (
    <li className="step" data-testid="workflow-step" data-step={step.key} data-status={step.status}>
      <div className="step-head">
        <button type="button" className="link" onClick={() => setOpen(!open)} aria-expanded={open}>
          {open ? "▾" : "▸"} <InertText text={step.name} oneLine />
        </button>
        <span className="muted">{step.kind}</span>
        <StatusBadge status={step.status} />
        {step.attempts > 1 && <span className="muted">{step.attempts} tries</span>}
        {step.branch && <InertText className="muted" text={step.branch} oneLine />}
        {step.waiting_for && <InertText className="muted" text={`waits for ${step.waiting_for}`} />}
        {step.child_run_id && <Link to={`/runs/${encodeURIComponent(step.child_run_id)}`}>child run</Link>}
        <button
          type="button"
          data-testid="replay-button"
          disabled={!canReplay}
          title={canReplay ? inert(`Start a new run from ${step.key}`, { oneLine: true }) : "Replay needs an ended run"}
          onClick={() => onReplay(step.key)}
        >
          Replay from here
        </button>
      </div>
      {step.failure && (
        <p className="error-note">
          <InertText text={`${step.failure.kind}: ${step.failure.error}`} />
        </p>
      )}
      {open && <StepDetail step={step} />}
      <HumanQuestion runId={runId} step={step} />
      <StepList runId={runId} steps={step.steps} canReplay={canReplay} onReplay={onReplay} />
      {step.items.length > 0 && (
        <ul className="items">
          {step.items.map((item) => (
            <ItemNode key={item.key} runId={runId} item={item} canReplay={canReplay} onReplay={onReplay} />
          ))}
        </ul>
      )}
    </li>
  );
}

function ItemNode({ runId, item, canReplay, onReplay }: { item: ItemView } & Omit<StepListProps, "steps">) {
  return (
    <li className="item" data-key={item.key}>
      <div className="step-head">
        <span className="mono">[{item.index}]</span>
        <StatusBadge status={item.status} />
        {item.item !== undefined && item.item !== null && (
          <InertText className="muted" text={JSON.stringify(item.item)} oneLine limit={120} />
        )}
      </div>
      <StepList runId={runId} steps={item.steps} canReplay={canReplay} onReplay={onReplay} />
    </li>
  );
}

/** A human step that waits: its question, to answer here (by the call its last try made). */
function HumanQuestion({ runId, step }: { runId: string; step: StepView }) {
  if (step.kind !== "human" || step.status !== "waiting") return null;
  const input = step.input;
  const asked = typeof input === "object" && input !== null && !Array.isArray(input) ? input.question : null;
  const callId = step.tries[step.tries.length - 1]?.call_id ?? step.key;
  const question = { call_id: callId, question: typeof asked === "string" ? asked : step.name, options: [] };
  return <QuestionCard runId={runId} question={question} />;
}

function StepDetail({ step }: { step: StepView }) {
  return (
    <div className="step-detail">
      <div>
        <h4>Input</h4>
        <JsonBlock value={step.input ?? null} limit={5000} />
      </div>
      <div>
        <h4>Output</h4>
        <JsonBlock value={step.output ?? null} limit={5000} />
      </div>
      {step.tries.length > 0 && (
        <div>
          <h4>Tries</h4>
          <ul>
            {step.tries.map((t) => (
              <li key={t.attempt}>
                <InertText text={`#${t.attempt} ${t.outcome}${t.error ? `: ${t.error}` : ""}`} />
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}
