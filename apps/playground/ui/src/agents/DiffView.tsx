// The changes between two versions of a spec, one row per changed path.

import type { SpecChange } from "../api/types";
import { JsonBlock } from "../components/InertText";
import { inert } from "../inert";

const OP_SIGN: Record<string, string> = { added: "+", removed: "−", changed: "~" };

export function DiffView({ changes }: { changes: readonly SpecChange[] }) {
  if (changes.length === 0) return <p className="muted">The two versions are the same.</p>;
  return (
    <table className="grid diff">
      <thead>
        <tr>
          <th />
          <th>path</th>
          <th>before</th>
          <th>after</th>
        </tr>
      </thead>
      <tbody>
        {changes.map((change) => (
          <tr
            key={`${change.op}:${change.path}`}
            className={`diff-${change.op}`}
            data-testid="diff-change"
            data-path={change.path}
            data-op={change.op}
          >
            <td className="op" title={change.op}>
              {OP_SIGN[change.op] ?? change.op}
            </td>
            <td className="mono">{inert(change.path || "(the whole spec)", { oneLine: true })}</td>
            <td>{change.op === "added" ? <span className="muted">—</span> : <JsonBlock value={change.before} />}</td>
            <td>{change.op === "removed" ? <span className="muted">—</span> : <JsonBlock value={change.after} />}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
