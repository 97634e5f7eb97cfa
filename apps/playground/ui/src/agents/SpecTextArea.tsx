// The spec's text with line numbers, and each field error beside the line it is about. Lines
// do not wrap, so a text line is a screen line; the gutter and the errors scroll with the text.

import { type UIEvent, useState } from "react";
import type { PlacedError } from "./fieldErrors";
import { FieldErrorLine } from "./FieldErrorLine";

const LINE_HEIGHT = 20;
const PAD = 8;

interface SpecTextAreaProps {
  text: string;
  onChange: (text: string) => void;
  errors: PlacedError[];
  /** The line of the text's syntax error, if any. */
  errorLine: number | null;
}

export function SpecTextArea({ text, onChange, errors, errorLine }: SpecTextAreaProps) {
  const [scroll, setScroll] = useState(0);
  const count = text.split("\n").length;
  const byLine = new Map<number, PlacedError[]>();
  for (const error of errors) {
    if (error.line === null) continue;
    byLine.set(error.line, [...(byLine.get(error.line) ?? []), error]);
  }
  const marked = new Set([...byLine.keys(), ...(errorLine ? [errorLine] : [])]);
  const onScroll = (event: UIEvent<HTMLTextAreaElement>) => setScroll(event.currentTarget.scrollTop);
  const top = (line: number) => PAD + (line - 1) * LINE_HEIGHT - scroll;

  return (
    <div className="spec-text" style={{ lineHeight: `${LINE_HEIGHT}px` }}>
      <div className="gutter" aria-hidden="true">
        {Array.from({ length: count }, (_, i) => (
          <div key={i} className={marked.has(i + 1) ? "marked" : undefined} style={{ top: top(i + 1), height: LINE_HEIGHT }}>
            {i + 1}
          </div>
        ))}
      </div>
      <textarea
        data-testid="spec-editor"
        spellCheck={false}
        wrap="off"
        value={text}
        onChange={(e) => onChange(e.target.value)}
        onScroll={onScroll}
        style={{ padding: PAD, lineHeight: `${LINE_HEIGHT}px` }}
      />
      <div className="line-errors">
        {[...byLine.entries()].map(([line, lineErrors]) => (
          <div key={line} className="line-error-row" style={{ top: top(line), minHeight: LINE_HEIGHT }}>
            {lineErrors.map((error, i) => (
              <FieldErrorLine key={`${error.path}-${i}`} error={error} />
            ))}
          </div>
        ))}
      </div>
    </div>
  );
}
