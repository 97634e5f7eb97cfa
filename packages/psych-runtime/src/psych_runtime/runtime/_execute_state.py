"""Loading a run: its log folded with the spec it was admitted with."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence

from psych_core import (
    AgentSpec,
    FoldError,
    Record,
    RunAdmitted,
    RunState,
    ScopedStore,
    Store,
    WorkflowSpec,
    fold_all,
)


async def load_spec(
    store: Store | ScopedStore, run_id: str, records: Sequence[Record]
) -> AgentSpec | WorkflowSpec:
    """The spec the run was admitted with (named by its first record), from the store: a
    `WorkflowSpec` when its JSON says ``"kind": "workflow"``, else an `AgentSpec`."""
    admitted = records[0].body if records else None
    if not isinstance(admitted, RunAdmitted):
        raise FoldError(run_id, 0, "log does not start with run_admitted")
    text = await store.get_spec(admitted.spec_version)
    if text is None:
        raise FoldError(run_id, 0, f"spec {admitted.spec_version} is not in the store")
    return spec_from_json(text)


@functools.lru_cache(maxsize=64)
def spec_from_json(text: str) -> AgentSpec | WorkflowSpec:
    """A stored spec, told apart by its ``kind``: an `AgentSpec` has none (adding one would
    change every agent's version).

    The same text gives the same (frozen) object: a worker loads the spec at every claim, and
    its version, remembered per object, is then hashed once. A stored spec is not refused for
    a skill link to a missing skill (`psych_core.Skill`): links were not checked before, and a
    run pinned to such a version must still be served."""
    parsed = json.loads(text)
    stored = {"stored": True}
    if isinstance(parsed, dict) and parsed.get("kind") == "workflow":
        return WorkflowSpec.model_validate_json(text, context=stored)
    return AgentSpec.model_validate_json(text, context=stored)


async def load_state(store: Store, run_id: str) -> RunState:
    """The run's whole log folded with its spec."""
    _, state = await load_log(store, run_id)
    return state


async def load_log(
    store: Store, run_id: str, records: list[Record] | None = None
) -> tuple[list[Record], RunState]:
    """The run's whole log (`records` when the caller has it already, else read), and the
    log folded with its spec."""
    if records is None:
        records = await store.read(run_id)
    spec = await load_spec(store, run_id, records)
    return records, fold_all(RunState.empty(run_id, spec), records)
