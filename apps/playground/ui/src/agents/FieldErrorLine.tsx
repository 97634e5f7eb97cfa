// One field error of a spec: its path and what is wrong, inert.

import { inert } from "../inert";
import type { PlacedError } from "./fieldErrors";

export function FieldErrorLine({ error }: { error: PlacedError }) {
  return (
    <div className="field-error" data-testid="field-error" data-path={error.path} data-line={error.line ?? ""}>
      {error.path && <span className="mono">{inert(error.path, { oneLine: true })}: </span>}
      {inert(error.message)}
    </div>
  );
}
