// Field errors of a spec (from the server's 422 or from the schema), as paths like
// "tools/0/name", and the editor line each is shown beside.

import type { SpecFieldError } from "../api/types";

export interface FieldError {
  /** "tools/0/name"; "" for the whole spec. */
  path: string;
  message: string;
}

export interface PlacedError extends FieldError {
  /** The editor line (1-based) to show it beside, or null to show it above the editor. */
  line: number | null;
}

// Pydantic adds validator names to a location: "function-after[check(), AgentSpec]".
const VALIDATOR_STEP = /^(function|model)-(after|before|wrap|plain)\[/;

/** The path of a server error's `loc` in `spec` (the JSON that was published).
 *
 * A tagged union's member adds its tag to the location (["tools", 0, "code", "name"] for the
 * tool of kind "code"), and a validator its name; neither is a key of the spec, so both are
 * left out. A location that starts with the request body ("body", "spec") is made relative to
 * the spec. */
export function pathOfLoc(loc: readonly (string | number)[], spec: unknown): string {
  let steps = [...loc];
  if (steps[0] === "body") steps = steps.slice(1);
  if (steps[0] === "spec" && !hasKey(spec, "spec")) steps = steps.slice(1);
  const kept: string[] = [];
  let current: unknown = spec;
  steps.forEach((step, index) => {
    const last = index === steps.length - 1;
    const key = String(step);
    if (!last && !hasKey(current, key)) {
      if (typeof step === "string" && VALIDATOR_STEP.test(step)) return;
      if (isObject(current) && current.kind === step) return; // a union tag
    }
    kept.push(key);
    current = child(current, key);
  });
  return kept.join("/");
}

export function fromServer(errors: readonly SpecFieldError[], spec: unknown): FieldError[] {
  return errors.map((error) => ({ path: pathOfLoc(error.loc, spec), message: error.msg }));
}

/** Each error with the line of its path, or of the nearest enclosing path that is written in
 * the text (a missing field is shown beside the object it is missing from). The whole spec's
 * errors, and those of a path not in the text, have no line. */
export function placeErrors(errors: readonly FieldError[], lines: Map<string, number> | null): PlacedError[] {
  return errors.map((error) => ({ ...error, line: lines ? lineOfPath(error.path, lines) : null }));
}

export function lineOfPath(path: string, lines: Map<string, number>): number | null {
  if (!path) return null;
  const steps = path.split("/");
  for (let n = steps.length; n > 0; n--) {
    const line = lines.get(steps.slice(0, n).join("/"));
    if (line !== undefined) return line;
  }
  return null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function hasKey(value: unknown, key: string): boolean {
  if (Array.isArray(value)) return /^\d+$/.test(key) && Number(key) < value.length;
  return isObject(value) && Object.prototype.hasOwnProperty.call(value, key);
}

function child(value: unknown, key: string): unknown {
  if (Array.isArray(value)) return value[Number(key)];
  return isObject(value) ? value[key] : undefined;
}
