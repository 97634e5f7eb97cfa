"""One attempt at a run: the loop `next_action -> perform -> append` until the run stops.

Durability: decisions are staged into a batch and committed before any effect; a tool call's
`ToolCallStarted` is committed before the tool runs and its finish after it returns. The model
turn's `ModelCallFinished` and the starts of the calls it asked for go in one append.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic_core import PydanticSerializationError

from psych_core import (
    FINAL_STATUSES,
    GUARD_REASONS,
    AgentSpec,
    AgentTool,
    AppendResult,
    Batch,
    Body,
    CallModel,
    ChildEnded,
    ChildStarted,
    CollectChildren,
    Committed,
    Compact,
    Finished,
    InboxPending,
    ModelCallFinished,
    Notify,
    Record,
    RecordTooLarge,
    RenewResult,
    RunCalls,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunIndex,
    RunState,
    RunSuspended,
    Store,
    StoreUnavailable,
    TimeOutChildren,
    ToolCall,
    ToolCallFailed,
    ToolCallSettled,
    ToolCallWaiting,
    ToolDefinition,
    ToolStep,
    ToolsUnavailable,
    WorkflowSpec,
    WorkflowTool,
    finished_call,
    fold,
    fold_all,
    made_record,
    next_action,
    parse_call_id,
    receive,
    step_name,
    walk,
)
from psych_core import Cancel as CancelSignal
from psych_runtime.model import (
    build_request,
    failure_record,
    failure_records,
    finished_record,
)
from psych_runtime.model.egress import Redactor
from psych_runtime.runtime._batches import failed_reply, instead, parts, unrecordable
from psych_runtime.runtime._children import collect_child, start_child
from psych_runtime.runtime._compact import compact
from psych_runtime.runtime._config import Runtime
from psych_runtime.runtime._decide import SETTLED_BY_CANCEL, decide
from psych_runtime.runtime._faults import armed, reach
from psych_runtime.runtime._lease import Lease
from psych_runtime.runtime._live_feed import complete_live
from psych_runtime.runtime._recall import recall_for
from psych_runtime.runtime._telemetry_feed import TelemetryFeed
from psych_runtime.tools import (
    InvalidArguments,
    ResolvedTool,
    ToolContext,
    ToolOutcomeUnknown,
    ToolRaised,
    ToolRegistry,
    Turn,
    WaitFor,
    json_result,
)

log = logging.getLogger("psych_runtime.worker")

type Appender = Callable[[str, int, Batch], Awaitable[AppendResult]]
"""How an attempt appends: `Store.append`, or a worker's `GroupCommit.append`."""

CLOSING = (RunCompleted, RunFailed, RunCancelled, RunSuspended)
"""Bodies that suspend or end a run: always last in a batch, refused while signals are unseen."""


_RUNNING = RunIndex(status="running")
"""The index of nearly every batch: one value, not one per append."""


def index_of(state: RunState) -> RunIndex:
    """The run row's index columns for `state`."""
    if state.status == "running" and state.waiting is None:
        return _RUNNING
    due = state.due_at if state.status == "waiting" else None
    return RunIndex(status=state.status, waiting=state.waiting, due_at=due)


class Attempt:
    """Runs one claimed attempt of one run until it ends, suspends or loses its lease."""

    def __init__(
        self,
        *,
        store: Store,
        state: RunState,
        runtime: Runtime,
        registry: ToolRegistry,
        lease: Lease | None = None,
        should_stop: Callable[[], bool] = lambda: False,
        resend_for: float = 10.0,
        feed: TelemetryFeed | None = None,
        appends: Appender | None = None,
        inbox_last: int | None = None,
    ) -> None:
        """`inbox_last` is the run's last inbox entry number as its claim found it
        (`Claim.inbox_last`): when the log has taken in every entry up to it, the attempt does
        not read the inbox before its first decision. None: it reads it."""
        if state.spec is None or state.admitted is None:
            raise ValueError(f"run {state.run_id}: an attempt needs the state folded with its spec")
        self.store = store
        self._appends = appends or store.append
        self.lease = lease
        self.state = state
        self.runtime = runtime
        self.scope = state.admitted.scope
        self.model = runtime.model
        self.tools = registry
        self.clock = runtime.clock
        self.stopped = False
        self._should_stop = should_stop
        self._resend_for = resend_for
        self._staged: list[Record] = []
        self._committed = state
        self._commit_lock = asyncio.Lock()
        self._validated: dict[str, dict[str, Any]] = {}
        self._timed_out_children: dict[str, str] = {}
        self.inbox_last = 0 if inbox_last is None else inbox_last
        self._read_inbox_first = inbox_last is None
        # Set while calls run: the lease heartbeat resolves it when new inbox entries exist.
        self._heard: asyncio.Future[None] | None = None
        # Known secret values are redacted from every body before it is folded or recorded;
        # the app's prices re-price model calls the provider did not price.
        self._redactor = Redactor(runtime.secrets)
        # Resolved before every model call, and on first need in an attempt that begins with
        # work left from the last turn (calls to start, run again or settle): `_tools_now`.
        self._resolved: Mapping[str, ResolvedTool] = {}
        self._turn_resolved = False
        # A steady turn (`Turn.steady`: no tool source, no policy) and its tools' definitions,
        # kept for the attempt's later model calls instead of being resolved again.
        self._steady: tuple[Turn, tuple[ToolDefinition, ...]] | None = None
        spec = state.spec
        # Reported after each confirmed append, only when an adapter is configured.
        self._feed = feed if feed is not None and feed.active else None
        self._store_name = type(store).__name__
        # A workflow's tool steps may each set a timeout of their own for the same tool.
        self._step_timeouts: dict[str, float] = (
            {
                step.name: step.timeout
                for step in walk(spec.steps)
                if isinstance(step, ToolStep) and step.timeout is not None
            }
            if isinstance(spec, WorkflowSpec)
            else {}
        )

    async def run(self) -> RunState:
        """Drive the run until it has nothing left to do in this attempt; return its state.

        When `should_stop` turns true (the worker drains), the attempt commits what it has
        decided, releases its lease before the next effect, and returns with `stopped` set.
        """
        if self._read_inbox_first:
            await self._move_inbox()
        while True:
            if self.inbox_last > self.state.inbox_seen:
                await self._move_inbox()
            action = next_action(self.state, self.clock.now())
            match action:
                case Finished():
                    await self._commit()
                    if self.state.ended or self.state.status == "waiting":
                        return self.state
                    # The final append was refused for signals that arrived with it: its
                    # closing record was dropped; take the signals in and decide again.
                case CallModel() | Compact() | RunCalls() if self._should_stop():
                    await self._commit()
                    await self.store.release(self.state.run_id, self.state.attempt)
                    self.stopped = True
                    return self.state
                case CallModel():
                    if not await self._commit():
                        continue
                    self._stage(await self._call_model())
                    reach("after_model_returned")
                case Compact(kept_from):
                    if not await self._commit():
                        continue
                    prices = self.runtime.prices
                    self._stage(await compact(self.state, self.model, kept_from, prices))
                case RunCalls(calls):
                    await self._tools_now()
                    await self._ensure_lease_for(calls)
                    if not await self._commit():
                        continue
                    await self._run_calls(calls)
                case CollectChildren(children):
                    if not await self._commit():
                        continue
                    for child in children:
                        self._stage(await collect_child(self.store, child))
                case _:
                    if isinstance(action, TimeOutChildren):
                        # Their child runs are cancelled by the append that records this
                        # (the calls leave the state when the next round is planned).
                        for late in action.calls:
                            if late.child_run_id is not None:
                                self._timed_out_children[late.call.call_id] = late.child_run_id
                    rules = self.runtime.approval_rules
                    tools = await self._tools_now()
                    bodies = decide(action, tools, rules=rules, validated=self._validated)
                    self._stage(bodies)

    async def _ensure_lease_for(self, calls: tuple[ToolCall, ...]) -> None:
        """Before the starts of unsafe calls are committed: the lease must outlast them, so
        that a call is not recorded as started (and later settled unknown) by an attempt
        that already knows it cannot run it. Checked again right before each effect."""
        if self.lease is None:
            return
        timeouts = [
            self._timeout(call, tool)
            for call in calls
            if (tool := self._resolved.get(call.name)) is not None and not self._safe(call, tool)
        ]
        if timeouts:
            margins = [self.lease.safe_margin(timeout) for timeout in timeouts]
            await self.lease.ensure(max(margins), f"the {len(calls)} call(s) of this turn")

    async def _tools_now(self) -> Mapping[str, ResolvedTool]:
        """The tools of this turn, resolved once if no model call of this attempt has yet.

        A required MCP server that is down fails the next model call, not the work left from
        the last turn: a call whose tool is not there fails (``unknown_tool``).
        """
        if not self._turn_resolved:
            self._resolved = (await self._turn()).tools
            self._turn_resolved = True
        return self._resolved

    async def _turn(self) -> Turn:
        """The tools this run may call now: those the policy allows its scope (an MCP
        server's as it lists them now); a child run only those its parent could use."""
        assert self.state.spec is not None
        admitted = self.state.admitted
        allowed = admitted.allowed_tools if admitted is not None else None
        return await self.tools.resolve_turn(
            self.state.spec, self.scope, self.runtime.policy, allowed
        )

    def _safe(self, call: ToolCall, tool: ResolvedTool) -> bool:
        """Whether `call` may run again after a crash: as its start recorded (an MCP tool's
        annotations), else as its spec says."""
        current = self.state.call(call.call_id)
        if current is not None and current.safe_to_retry is not None:
            return current.safe_to_retry
        return tool.ref.safe_to_retry

    def _timeout(self, call: ToolCall, tool: ResolvedTool) -> float | None:
        """The seconds a call may run: its tool's timeout, or its workflow step's when that
        is shorter."""
        limit = tool.ref.timeout
        if not self._step_timeouts:  # an agent's call, or a workflow with no step timeout
            return limit
        own = self._step_timeouts.get(step_name(call.call_id))
        if own is None or limit is None:
            return own if limit is None else limit
        return min(own, limit)

    async def _start_child(self, call: ToolCall, tool: ResolvedTool, value: Any) -> Body:
        ref = tool.ref
        assert isinstance(ref, AgentTool | WorkflowTool)
        text = json.dumps(value, ensure_ascii=False) if isinstance(ref, WorkflowTool) else value
        allowed: tuple[str, ...] | None
        if isinstance(self.state.spec, WorkflowSpec):
            # A workflow's children are its own steps' agents and workflows: narrowed as the
            # workflow run itself was (by its parent, if it has one), and by the policy.
            admitted = self.state.admitted
            allowed = admitted.allowed_tools if admitted is not None else None
        else:
            allowed = tuple(self._resolved)
        child = await start_child(
            self.store, self.state, call, ref, text, allowed, self.clock, self._redactor
        )
        return ChildStarted(call_id=call.call_id, child_run_id=child)

    def _notices(self, records: tuple[Record, ...]) -> tuple[Notify, ...]:
        """Other runs this batch must wake: the parent when a child ends; the children of a
        run that is cancelled."""
        if self.state.status not in FINAL_STATUSES and not self._timed_out_children:
            return ()  # the common case: only an ending run, or a step timed out, notifies
        notices: list[Notify] = []
        admitted = self.state.admitted
        if (
            self.state.status in FINAL_STATUSES
            and admitted is not None
            and admitted.parent_run_id is not None
            and admitted.parent_call_id is not None
        ):
            ended = ChildEnded(
                child_run_id=self.state.run_id,
                call_id=admitted.parent_call_id,
                status=self.state.status,
            )
            notices.append(Notify(admitted.parent_run_id, f"child:{self.state.run_id}", ended))
        if any(_closes_children(record.body) for record in records):
            how = "was cancelled" if self.state.status == "cancelled" else "failed"
            for call in self.state.calls:
                if call.child_run_id is not None:
                    cancel = CancelSignal(reason=f"parent run {self.state.run_id} {how}")
                    key = f"cancel:parent:{self.state.run_id}"
                    notices.append(Notify(call.child_run_id, key, cancel))
        # A workflow step whose child run outlived the step's timeout: the child is cancelled
        # by the append that fails the step.
        for call_id, child in self._timed_out_children.items():
            cancel = CancelSignal(reason=f"step {call_id} of run {self.state.run_id} timed out")
            key = f"cancel:timeout:{self.state.run_id}:{call_id}"
            notices.append(Notify(child, key, cancel))
        return tuple(notices)

    def heard(self, renewed: RenewResult) -> None:
        """Told by the lease heartbeat: new inbox entries may exist."""
        if renewed.inbox_last > self.inbox_last:
            self.inbox_last = renewed.inbox_last
            if self._heard is not None and not self._heard.done():
                self._heard.set_result(None)

    async def _move_inbox(self) -> None:
        """Move the inbox entries after the last one in the log into it, in order."""
        entries = await self.store.signals(self.state.run_id, self.state.inbox_seen)
        for entry in entries:
            self._stage([receive(self.state, entry)])
            self.inbox_last = max(self.inbox_last, entry.number)

    # -- the log ----------------------------------------------------------------------------

    def _stage(self, bodies: list[Body]) -> None:
        """Fold `bodies` into the state and hold them for the next commit."""
        at = self.clock.now()
        for body in map(self._redactor.body, bodies):
            state = self.state
            record = made_record(state.run_id, state.next_seq, state.attempt, at, body)
            self.state = fold(state, record)
            self._staged.append(record)

    async def _commit(self) -> bool:
        """Append the staged records; True when they were committed as staged (or none were).

        They go in one batch when the store's limits allow it (the common case), else in
        consecutive batches within them, all committed before the next effect. A record the
        store cannot keep (too large, not valid text) is recorded as a failure the run can go
        on from instead (`_batches.instead`), never raised out of the attempt; then, and when
        a closing record was dropped for signals that arrived (`InboxPending`), this returns
        False: the state changed, so the caller decides again before any effect.
        """
        if not self._staged:
            return True
        try:
            all_parts = parts(self._staged, self.store.limits, measured=False)
            if len(all_parts) == 1:  # the common case, without a further coroutine
                return await self._append(all_parts[0], self.state, last=True)
            return await self._commit_parts(all_parts)
        except (RecordTooLarge, PydanticSerializationError) as exc:
            self._replace_unrecordable(exc)
            await self._commit_parts(parts(self._staged, self.store.limits, measured=True))
            return False

    async def _commit_parts(self, all_parts: list[tuple[Record, ...]]) -> bool:
        for number, part in enumerate(all_parts, start=1):
            last = number == len(all_parts)
            after = self.state if last else fold_all(self._committed, part)
            if not await self._append(part, after, last=last):
                return False
        return True

    async def _append(self, records: tuple[Record, ...], after: RunState, *, last: bool) -> bool:
        """Append `records`, the oldest staged ones, as one batch; `after` is the state they
        leave. False when the batch was refused for signals it would close the run past.

        A store that cannot be reached is asked again with the same batch (its `batch_id`
        makes the re-send safe) for up to `resend_for` seconds: an append whose answer was
        lost is never assumed to have failed, nor acted on before it is confirmed.
        """
        batch = Batch(
            records=records,
            batch_id=f"{after.attempt}.{records[0].seq}",
            index=index_of(after),
            inbox_seen=after.inbox_seen,
            notify=self._notices(records) if last else (),
        )
        loop = asyncio.get_running_loop()
        sent = loop.time()
        deadline = sent + self._resend_for
        delay = 0.05
        while True:
            try:
                result = await self._appends(after.run_id, after.attempt, batch)
                break
            except StoreUnavailable:
                if loop.time() + delay > deadline:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
            except InboxPending as pending:
                # Signals arrived that this batch would suspend or end the run past. Keep
                # what the batch records (effects' results are never thrown away), drop the
                # closing decision, and let the loop move the signals in and decide again.
                self.inbox_last = max(self.inbox_last, pending.inbox_last)
                return await self._commit_without_closing()
        self.inbox_last = max(self.inbox_last, result.inbox_last)
        self._committed = after
        del self._staged[: len(records)]
        if self._feed is not None:
            seconds = loop.time() - sent
            self._feed.committed(
                Committed(records, after, self._store_name, seconds, self._feed.provider)
            )
        if last:
            self._timed_out_children.clear()
        if armed():
            for kind in dict.fromkeys(record.body.type for record in records):
                reach(f"after_commit:{kind}")
        return True

    def _replace_unrecordable(self, refused: Exception) -> None:
        """Stage again, in place of each record the store cannot keep, what `instead` says;
        raise `refused` again when every record could be kept (a batch merely too large,
        which measured parts fix)."""
        found = {why.seq: why for why in unrecordable(self._staged, self.store.limits)}
        if not found:
            if isinstance(refused, RecordTooLarge):
                return
            raise refused
        bodies: list[Body] = []
        for record in self._staged:
            why = found.get(record.seq)
            if why is None:
                bodies.append(record.body)
                continue
            replaced = instead(self.state.run_id, record.body, why)
            if replaced is None:
                # The calls the reply asked for cannot be recorded without it: what was
                # staged from it on is dropped, and the run ends saying why.
                assert isinstance(record.body, ModelCallFinished)
                bodies.append(failed_reply(self.state.run_id, record.body, why))
                break
            bodies += replaced
        log.warning(
            "run %s attempt %d: %d record(s) could not be kept by the store and were "
            "recorded as failures: %s",
            self.state.run_id,
            self.state.attempt,
            len(found),
            "; ".join(f"seq {why.seq}: {why.problem}" for why in found.values()),
        )
        self._staged = []
        self.state = self._committed
        self._stage(bodies)

    async def _commit_without_closing(self) -> bool:
        kept = list(self._staged)
        while kept and isinstance(kept[-1].body, CLOSING):
            kept.pop()
        self._staged = kept
        self.state = fold_all(self._committed, kept)
        await self._commit()
        return False

    # -- effects ----------------------------------------------------------------------------

    async def _call_model(self) -> list[Body]:
        # Resolved again before every model call: what a run may use can change between turns.
        spec = self.state.spec
        assert isinstance(spec, AgentSpec)
        if self._steady is not None:
            turn, definitions = self._steady
        else:
            turn = await self._turn()
            definitions = tuple(tool.definition() for tool in turn.tools.values())
            if turn.steady:
                self._steady = (turn, definitions)
        self._resolved = turn.tools
        self._turn_resolved = True
        if turn.failure is not None:
            error = f"run {self.state.run_id}, seq {self.state.next_seq}: {turn.failure}"
            return [RunFailed(reason="tool_unavailable", error=error)]
        # An optional tool source that is down: the turn goes on without it, and says so.
        dropped: list[Body] = [
            ToolsUnavailable(source=source, error=error) for source, error in turn.unavailable
        ]
        # The end user's facts (AgentSpec.memory): listed in the request, recorded by id.
        facts, unrecalled = await recall_for(self.state, self.runtime.memory)
        dropped += unrecalled
        request = build_request(self.state, definitions, facts=facts)
        try:
            # Live text (Runtime.live) is keyed by the seq this call's append starts at.
            response = await complete_live(
                self.model,
                request,
                self.runtime.live,
                attempt=self.state.attempt,
                seq=self.state.next_seq,
                redactor=self._redactor,
            )
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
            return [*dropped, *failures, RunFailed(reason="model_error", error=error)]
        # Attempts that failed before one served are recorded first, in the same append.
        failed = [failure_record(failure) for failure in response.failures]
        seq = self.state.next_seq + len(dropped) + len(failed)
        recalled = tuple(fact.id for fact in facts)
        finished = finished_record(response, seq, self.runtime.prices, recalled=recalled)
        return [*dropped, *failed, finished]

    async def _run_calls(self, calls: tuple[ToolCall, ...]) -> None:
        async def run_one(call: ToolCall) -> None:
            body = await self._execute(call)
            reach("after_tool_returned")
            async with self._commit_lock:
                self._stage([body])
                await self._commit()

        # Started eagerly: a call that needs no waiting (and its commit, when the store needs
        # none either) is done before the loop would even have scheduled it, so the common
        # single quick call costs no task switch and no wait below.
        loop = asyncio.get_running_loop()
        tasks = {asyncio.Task(run_one(call), loop=loop, eager_start=True): call for call in calls}
        try:
            while running := [task for task in tasks if not task.done()]:
                # One plain future, woken by the first call to end or by the heartbeat
                # (`heard`): what `asyncio.wait` would build, without its extra waiter.
                woken = self._heard = loop.create_future()

                def wake(_: object, woken: asyncio.Future[None] = woken) -> None:
                    if not woken.done():
                        woken.set_result(None)

                for task in running:
                    task.add_done_callback(wake)
                try:
                    await woken
                finally:
                    # Also when the attempt is cancelled here (a lost lease).
                    woken.cancel()
                    self._heard = None
                    for task in running:
                        task.remove_done_callback(wake)
                _raise_first_error(tasks)
                if self.inbox_last > self.state.inbox_seen:
                    async with self._commit_lock:
                        await self._move_inbox()
                        await self._commit()
                    if self.state.cancel is not None:
                        await self._cancel_in_flight(tasks)
                        return
            _raise_first_error(tasks)
        finally:
            for task in tasks:
                task.cancel()

    async def _cancel_in_flight(self, tasks: dict[asyncio.Task[None], ToolCall]) -> None:
        """Cancel arrived while calls run: give them the grace period, then settle the rest."""
        grace = self.runtime.cancel_grace
        running = [task for task in tasks if not task.done()]
        if running:
            await asyncio.wait(running, timeout=grace)
        async with self._commit_lock:
            cut = [tasks[task] for task in tasks if not task.done()]
            for task in tasks:
                task.cancel()
            note = f"{SETTLED_BY_CANCEL}, past the {grace:g} s grace period"
            self._stage([ToolCallSettled(call_id=call.call_id, note=note) for call in cut])
            await self._commit()

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
        # Validated when the start was decided; an attempt that took over a started call (a safe
        # one, run again) validates it here.
        arguments = self._validated.pop(call.call_id, None)
        if arguments is None:
            current = self.state.call(call.call_id)
            text = current.effective_arguments if current is not None else call.arguments
            try:
                arguments = tool.validate(text)
            except InvalidArguments as exc:
                error = str(exc)
                return ToolCallFailed(call_id=call.call_id, reason="invalid_arguments", error=error)
        # The tries of a workflow step share one key: a careful tool (or the API behind it)
        # that sees a retry of a call whose outcome was unknown can tell it is the same one.
        operation = call.call_id
        if isinstance(self.state.spec, WorkflowSpec):
            operation = parse_call_id(call.call_id).key
        context = ToolContext(
            run_id=self.state.run_id,
            call_id=call.call_id,
            tool=call.name,
            attempt=self.state.attempt,
            idempotency_key=f"{self.state.run_id}:{operation}",
            scope=self.scope,
            runtime=self.runtime,
        )
        if tool.function is None:
            return await self._start_child(call, tool, arguments["input"])
        timeout = self._timeout(call, tool)
        if self.lease is not None and not self._safe(call, tool):
            # A stale attempt (paused past its lease, cut off from the store) must not start
            # an effect that another attempt may already have settled `unknown`.
            needed = self.lease.safe_margin(timeout)
            await self.lease.ensure(needed, f"tool call {call.call_id} ({call.name!r})")
        try:
            if timeout is None:
                result = await tool.function.invoke(arguments, context)
            else:
                async with asyncio.timeout(timeout):
                    result = await tool.function.invoke(arguments, context)
        except ToolRaised as exc:
            return ToolCallFailed(call_id=call.call_id, reason=exc.reason, error=str(exc))
        except ToolOutcomeUnknown as exc:
            return ToolCallSettled(call_id=call.call_id, note=str(exc))
        except TimeoutError:
            return _timed_out(call, self._safe(call, tool), timeout)
        if isinstance(result, WaitFor):
            return ToolCallWaiting(call_id=call.call_id, note=result.note, due_at=result.due_at)
        try:
            value = json_result(call.name, result)
        except ToolRaised as exc:
            return ToolCallFailed(call_id=call.call_id, reason=exc.reason, error=str(exc))
        return finished_call(call.call_id, value)


def _raise_first_error(tasks: dict[asyncio.Task[None], ToolCall]) -> None:
    # A call's task fails only when recording failed (a lost lease, an unreachable store) or
    # the process is going down: the attempt cannot go on, so neither do its other calls.
    for task in tasks:
        if task.done() and not task.cancelled():
            error = task.exception()
            if error is not None:
                raise error


def _timed_out(call: ToolCall, safe: bool, timeout: float | None) -> Body:
    # A safe tool's timeout is a plain failure. For any other tool the effect may have
    # happened (or may still happen: a sync function's thread cannot be stopped), so the
    # outcome is unknown and the model is told so.
    message = f"tool {call.name!r} did not finish within its timeout of {timeout} s"
    if safe:
        return ToolCallFailed(call_id=call.call_id, reason="timeout", error=message)
    return ToolCallSettled(call_id=call.call_id, note=message)


def _closes_children(body: object) -> bool:
    """Whether `body` ends the run with its child runs cancelled: a cancel, or a guard of the
    spec (`GUARD_REASONS`) that ended it while calls were open."""
    return isinstance(body, RunCancelled) or (
        isinstance(body, RunFailed) and body.reason in GUARD_REASONS
    )
