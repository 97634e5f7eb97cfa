// Text from a log, a spec, a model or a tool, shown as text with its invisible characters
// made visible. Never HTML: see ../inert.ts.

import { inert, inertJson } from "../inert";

interface InertTextProps {
  text: string;
  oneLine?: boolean;
  limit?: number;
  testId?: string;
  className?: string;
}

export function InertText({ text, oneLine, limit, testId, className }: InertTextProps) {
  return (
    <span className={className} data-testid={testId}>
      {inert(text, { oneLine, limit })}
    </span>
  );
}

interface JsonBlockProps {
  value: unknown;
  testId?: string;
  className?: string;
  limit?: number;
}

/** A JSON value, pretty and inert, in a <pre>. */
export function JsonBlock({ value, testId, className, limit }: JsonBlockProps) {
  return (
    <pre className={className ?? "json"} data-testid={testId}>
      {inertJson(value, { limit })}
    </pre>
  );
}
