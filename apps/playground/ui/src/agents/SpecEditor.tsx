// Writing and publishing a spec: the JSON text, its kind, and its errors next to the lines
// they are about — the text's syntax error while typing, and the server's 422 field errors
// after a publish. The server is the one judge of a spec: the page runs no schema validator of
// its own (its Content-Security-Policy allows no eval, which schema compilers need).

import { useMemo, useState } from "react";
import { ApiError, errorMessage, publishSpec } from "../api/client";
import type { JsonValue, PublishResult, SpecKind } from "../api/types";
import { ErrorNote } from "../components/ErrorNote";
import { inert } from "../inert";
import { FieldErrorLine } from "./FieldErrorLine";
import { type FieldError, fromServer, placeErrors } from "./fieldErrors";
import { parseJsonLines } from "./jsonLines";
import { SpecTextArea } from "./SpecTextArea";

interface SpecEditorProps {
  initialKind: SpecKind;
  initialText: string;
  /** The kind cannot change (a new version of a published spec keeps its kind). */
  kindLocked?: boolean;
  /** Starting texts per kind: switching kind swaps the text while it is still untouched. */
  examples?: Partial<Record<SpecKind, string>>;
  onPublished?: (result: PublishResult) => void;
}

interface ServerErrors {
  /** The text they were found in: they are shown until the text changes. */
  text: string;
  errors: FieldError[];
}

export function SpecEditor({ initialKind, initialText, kindLocked, examples, onPublished }: SpecEditorProps) {
  const [kind, setKind] = useState<SpecKind>(initialKind);
  const [text, setText] = useState(initialText);
  const [server, setServer] = useState<ServerErrors | null>(null);
  const [result, setResult] = useState<PublishResult | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const parsed = useMemo(() => parseJsonLines(text), [text]);
  const errors: FieldError[] = server && server.text === text ? server.errors : [];
  const placed = placeErrors(errors, parsed.ok ? parsed.lines : null);

  const changeKind = (next: SpecKind) => {
    const example = examples?.[next];
    if (example !== undefined && text === examples?.[kind]) setText(example);
    setKind(next);
  };

  const publish = () => {
    if (!parsed.ok || busy) return;
    const spec = parsed.value;
    const sent = text;
    setBusy(true);
    setFailure(null);
    setResult(null);
    publishSpec({ kind, spec: spec as JsonValue })
      .then((published) => {
        setServer(null);
        setResult(published);
        onPublished?.(published);
      })
      .catch((reason: unknown) => {
        if (reason instanceof ApiError && reason.status === 422) {
          const fields = reason.fieldErrors();
          const found = fields.length
            ? fromServer(fields, spec)
            : [{ path: "", message: errorMessage(reason) }];
          setServer({ text: sent, errors: found });
        } else {
          setFailure(errorMessage(reason));
        }
      })
      .finally(() => setBusy(false));
  };

  const unplaced = placed.filter((e) => e.line === null);
  return (
    <div className="spec-editor">
      <div className="toolbar">
        <label>
          Kind
          <select
            data-testid="spec-kind"
            value={kind}
            disabled={kindLocked}
            onChange={(e) => changeKind(e.target.value as SpecKind)}
          >
            <option value="agent">agent</option>
            <option value="workflow">workflow</option>
          </select>
        </label>
        <button type="button" className="primary" data-testid="publish-button" disabled={!parsed.ok || busy} onClick={publish}>
          {busy ? "Publishing…" : "Publish"}
        </button>
        <span className="muted">
          {errors.length ? "the server refused this spec" : "the server checks the spec when you publish"}
        </span>
      </div>
      {!parsed.ok && (
        <p className="error-note" data-testid="json-error">
          The text is not JSON: line {parsed.line}, column {parsed.column}: {parsed.message}
        </p>
      )}
      {unplaced.map((error, i) => (
        <FieldErrorLine key={`${error.path}-${i}`} error={error} />
      ))}
      <SpecTextArea text={text} onChange={setText} errors={placed} errorLine={parsed.ok ? null : parsed.line} />
      <ErrorNote message={failure} />
      {result && (
        <p className="ok-note" data-testid="publish-result" data-version={result.version} data-created={String(result.created)}>
          {result.created ? "Published" : "Already published"}: {inert(result.name, { oneLine: true })} version{" "}
          <span className="mono">{result.version}</span>
          {result.created ? " (new version)" : " (this exact spec was published before; nothing changed)"}
        </p>
      )}
    </div>
  );
}
