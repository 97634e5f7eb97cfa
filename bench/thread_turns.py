"""What a turn costs late in a long thread, against early in it, measured in one run.

    python -m bench.thread_turns --store memory|sqlite|postgres|mysql|dynamodb [--runs 200]

One thread of ``--runs`` runs (``dispatch(..., continues=...)``), each one user message and one
answer, with compaction on (`Compaction(threshold_tokens=120, keep_turns=1)` and a model
that reports usage from the request's size, as a provider does). Each run is driven by a
session in this process. The time of a run (dispatch, claim, fold, model calls, appends) is
taken for runs 2 to 11 and for the last ten; the ratio of the medians should stay within 2:
no run reads another run's log to fold, and compaction keeps what a continuation carries
bounded. The model answers at once, so the time is Psych's and the store's alone.

The last line is machine-readable:

    store=NAME runs=N early_ms=X late_ms=Y ratio=Z
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psych_runtime
from bench._arguments import at_least
from bench._stores import bench_url, discard, fresh_store
from psych_runtime import AgentSpec, ModelRef, Scope, Usage
from psych_runtime.conversations import Compaction
from psych_runtime.ports import ModelRequest, ModelResponse, UserMessage

SCOPE = Scope(tenant="bench")
SPEC = AgentSpec(
    name="thread",
    model=ModelRef(model="big"),
    compaction=Compaction(threshold_tokens=120, keep_turns=1, model=ModelRef(model="small")),
)
FILLER = " ".join(["word"] * 80)
MIN_RUNS = 21
"""The fewest runs whose first (runs 2 to 11) and last ten do not overlap."""


def size(request: ModelRequest) -> int:
    """The request's size in characters, instructions and messages."""
    return len(request.instructions or "") + sum(
        len(getattr(m, "text", None) or getattr(m, "content", "") or "") for m in request.messages
    )


@dataclass
class SizedModel:
    """Answers at once, summarises when asked (model ``small``), and reports usage from the
    request's size (four characters a token), as a provider would; keeps every request."""

    requests: list[ModelRequest] = field(default_factory=list)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if request.model.model == "small":
            text = "The user asked numbered questions; each was answered."
        else:
            last = next(m for m in reversed(request.messages) if isinstance(m, UserMessage))
            text = f"Answer to {last.text[:12]}: {FILLER}"
        return ModelResponse(
            model=request.model.model,
            text=text,
            usage=Usage(input=size(request) // 4, output=len(text) // 4),
            usage_source="provider",
        )


async def measure(url: str, runs: int) -> tuple[float, float]:
    """Median milliseconds of runs 2 to 11, and of the last ten."""
    times: list[float] = []
    async with (
        fresh_store(url) as store,
        psych_runtime.session(SizedModel(), store=store, scope=SCOPE) as s,
    ):
        previous: str | None = None
        for number in range(1, runs + 1):
            started = time.perf_counter()
            view = await s.ask(SPEC, f"Question {number:04d}: {FILLER}", continues=previous)
            times.append((time.perf_counter() - started) * 1000)
            assert view.status == "completed", view
            previous = view.run_id
    return statistics.median(times[1:11]), statistics.median(times[-10:])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="sqlite")
    parser.add_argument(
        "--runs",
        type=at_least(MIN_RUNS),
        default=200,
        help=f"runs in the thread (at least {MIN_RUNS})",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = bench_url(args.store, "thread", Path(folder))
        try:
            early, late = await measure(url, args.runs)
        finally:
            await discard(url)
    print(f"turn at runs 2-11: {early:.2f} ms; at the last ten of {args.runs}: {late:.2f} ms")
    print(
        f"store={args.store} runs={args.runs} early_ms={early:.3f} late_ms={late:.3f} "
        f"ratio={late / early:.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
