"""One attempt at a run: the loop `next_action -> perform -> append` until the run stops.

Durability: decisions are staged into a batch and committed before any effect; a tool call's
`ToolCallStarted` is committed before the tool runs and its finish after it returns. The model
turn's `ModelCallFinished` and the starts of the calls it asked for go in one append.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from psych_core import (
    Batch,
    Body,
    CallModel,
    Complete,
    Fail,
    Finished,
    ModelClient,
    Record,
    RetryCalls,
    RunCalls,
    RunFailed,
    RunIndex,
    RunState,
    Scope,
    SecretResolver,
    SettleCalls,
    StartCalls,
    Store,
    StoreUnavailable,
    ToolCall,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    fold,
    next_action,
)
from psych_runtime.model import (
    PriceTable,
    build_request,
    failure_record,
    failure_records,
    finished_record,
)
from psych_runtime.model.egress import Redactor
from psych_runtime.runtime._clock import Clock
from psych_runtime.runtime._decide import decide
from psych_runtime.runtime._faults import reach
from psych_runtime.tools import (
    InvalidArguments,
    ResolvedTool,
    ToolContext,
    ToolRaised,
    ToolRegistry,
)


def index_of(state: RunState) -> RunIndex:
    """The run row's index columns for `state`."""
    return RunIndex(status=state.status, waiting=state.waiting)


class Attempt:
    """Runs one claimed attempt of one run until it ends, suspends or loses its lease."""

    def __init__(
        self,
        *,
        store: Store,
        state: RunState,
        scope: Scope,
        model: ModelClient,
        tools: ToolRegistry,
        clock: Clock,
        should_stop: Callable[[], bool] = lambda: False,
        resend_for: float = 10.0,
        secrets: SecretResolver | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        if state.spec is None:
            raise ValueError(f"run {state.run_id}: an attempt needs the state folded with its spec")
        self.store = store
        self.state = state
        self.scope = scope
        self.model = model
        self.tools = tools
        self.clock = clock
        self.stopped = False
        self._should_stop = should_stop
        self._resend_for = resend_for
        self._staged: list[Record] = []
        self._commit_lock = asyncio.Lock()
        # Known secret values are redacted from every body before it is folded or recorded;
        # the app's prices re-price model calls the provider did not price.
        self._redactor = Redactor(secrets)
        self._prices = prices
        self._resolved: Mapping[str, ResolvedTool] = tools.resolve(state.spec)

    async def run(self) -> RunState:
        """Drive the run until it has nothing left to do in this attempt; return its state.

        When `should_stop` turns true (the worker drains), the attempt commits what it has
        decided, releases its lease before the next effect, and returns with `stopped` set.
        """
        while True:
            action = next_action(self.state)
            match action:
                case Finished():
                    await self._commit()
                    return self.state
                case CallModel() | RunCalls() if self._should_stop():
                    await self._commit()
                    await self.store.release(self.state.run_id, self.state.attempt)
                    self.stopped = True
                    return self.state
                case CallModel():
                    await self._commit()
                    self._stage(await self._call_model())
                    reach("after_model_returned")
                case RunCalls(calls):
                    await self._commit()
                    await self._run_calls(calls)
                case StartCalls() | RetryCalls() | SettleCalls() | Complete() | Fail():
                    self._stage(decide(action, self._resolved))

    # -- the log ----------------------------------------------------------------------------

    def _stage(self, bodies: list[Body]) -> None:
        """Fold `bodies` into the state and hold them for the next commit."""
        at = self.clock.now()
        for body in map(self._redactor.body, bodies):
            record = Record(
                run_id=self.state.run_id,
                seq=self.state.next_seq,
                attempt=self.state.attempt,
                at=at,
                body=body,
            )
            self.state = fold(self.state, record)
            self._staged.append(record)

    async def _commit(self) -> None:
        """Append the staged records in one batch; nothing happens when none are staged.

        A store that cannot be reached is asked again with the same batch (its `batch_id`
        makes the re-send safe) for up to `resend_for` seconds: an append whose answer was
        lost is never assumed to have failed, nor acted on before it is confirmed.
        """
        if not self._staged:
            return
        records = tuple(self._staged)
        batch = Batch(
            records=records,
            batch_id=f"{self.state.attempt}.{records[0].seq}",
            index=index_of(self.state),
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._resend_for
        delay = 0.05
        while True:
            try:
                await self.store.append(self.state.run_id, self.state.attempt, batch)
                break
            except StoreUnavailable:
                if loop.time() + delay > deadline:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
        self._staged.clear()
        for kind in dict.fromkeys(record.body.type for record in records):
            reach(f"after_commit:{kind}")

    # -- effects ----------------------------------------------------------------------------

    async def _call_model(self) -> list[Body]:
        # Resolved again before every model call: what a run may use can change between turns.
        spec = self.state.spec
        assert spec is not None
        self._resolved = self.tools.resolve(spec)
        definitions = tuple(tool.definition() for tool in self._resolved.values())
        request = build_request(self.state, definitions)
        try:
            response = await self.model.complete(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failures = failure_records(exc, spec.model.model)
            last = failures[-1]
            error = (
                f"run {self.state.run_id}, seq {self.state.next_seq}: model "
                f"{last.model!r} failed: {last.error}"
            )
            if len(failures) > 1:
                error += f" ({len(failures)} failed attempts, each recorded)"
            return [*failures, RunFailed(reason="model_error", error=error)]
        # Attempts that failed before one served are recorded first, in the same append.
        failed = [failure_record(failure) for failure in response.failures]
        seq = self.state.next_seq + len(failed)
        return [*failed, finished_record(response, seq, self._prices)]

    async def _run_calls(self, calls: tuple[ToolCall, ...]) -> None:
        async def run_one(call: ToolCall) -> None:
            body = await self._execute(call)
            reach("after_tool_returned")
            async with self._commit_lock:
                self._stage([body])
                await self._commit()

        async with asyncio.TaskGroup() as group:
            for call in calls:
                group.create_task(run_one(call))

    async def _execute(self, call: ToolCall) -> Body:
        tool = self._resolved.get(call.name)
        if tool is None:
            # Started by an earlier attempt on a worker that had this tool; this one has not.
            # The effect never begins here, so the call fails rather than settling unknown.
            return ToolCallFailed(
                call_id=call.call_id,
                reason="unknown_tool",
                error=f"tool {call.name!r} is not available to this worker",
            )
        try:
            arguments = tool.function.validate(call.arguments)
        except InvalidArguments as exc:
            return ToolCallFailed(call_id=call.call_id, reason="invalid_arguments", error=str(exc))
        context = ToolContext(
            run_id=self.state.run_id,
            call_id=call.call_id,
            tool=call.name,
            attempt=self.state.attempt,
            idempotency_key=f"{self.state.run_id}:{call.call_id}",
            scope=self.scope,
        )
        timeout = tool.ref.timeout
        try:
            async with asyncio.timeout(timeout):
                result = await tool.function.invoke(arguments, context)
        except ToolRaised as exc:
            return ToolCallFailed(call_id=call.call_id, reason="error", error=str(exc))
        except TimeoutError:
            return _timed_out(call, tool, timeout)
        return ToolCallFinished(call_id=call.call_id, result=result)


def _timed_out(call: ToolCall, tool: ResolvedTool, timeout: float | None) -> Body:
    # A safe tool's timeout is a plain failure. For any other tool the effect may have
    # happened (or may still happen: a sync function's thread cannot be stopped), so the
    # outcome is unknown and the model is told so.
    message = f"tool {call.name!r} did not finish within its timeout of {timeout} s"
    if tool.ref.safe_to_retry:
        return ToolCallFailed(call_id=call.call_id, reason="timeout", error=message)
    return ToolCallSettled(call_id=call.call_id, note=message)
