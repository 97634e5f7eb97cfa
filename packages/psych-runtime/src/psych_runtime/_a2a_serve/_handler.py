"""`RunRequestHandler`: the A2A SDK's request handler, answered by Psych's public functions.

The SDK's route builders (``create_jsonrpc_routes``, ``create_rest_routes``) parse A2A
requests and call a `RequestHandler`; this one maps each call onto a run of one spec:

- message send: `dispatch` (the task id is the run id; the message id is the idempotency
  key, so a retried send admits nothing new); a message on a task that needs input answers
  it (`resume`, or `answer` for a workflow's human step); a message on a working agent's
  task is a user message (`interrupt`);
- task get: the run's log folded (`read_log`, as `status` does);
- streaming (send, subscribe): `stream`, one status update each time the task's state
  changes, and the output artifact when it completes;
- cancel: `cancel`.

The handler runs nothing itself: a worker in another process runs the run, as for any
dispatch. Who the caller is comes from the app: `scoped` turns the HTTP request into the
store as that caller may see it (``store.scoped(Scope(...))``), exactly as the app's own
routes do; a tenant named in an A2A request body or path is ignored.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import aclosing, contextmanager
from typing import cast

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import RequestHandler
from a2a.server.routes import DefaultServerCallContextBuilder, ServerCallContextBuilder
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.proto_utils import validate_proto_required_fields
from a2a.utils.task import apply_history_length
from starlette.requests import Request

from psych_core import (
    HUMAN_TOOL,
    AgentSpec,
    CorruptLog,
    DuplicateSignal,
    IdempotencyConflict,
    PolicyDenied,
    Record,
    RunAdmitted,
    RunFinished,
    RunNotFound,
    ScopedStore,
    SpecError,
    WorkflowSpec,
)
from psych_runtime._a2a_serve._messages import message_payload, message_text
from psych_runtime._a2a_serve._tasks import (
    INTERRUPTED,
    TERMINAL,
    RunTask,
    answered_by_message,
    artifact_event,
    state_of,
    status_event,
    task_of,
)
from psych_runtime._surface._reading import read_log
from psych_runtime._surface._signals import answer, cancel, interrupt, resume
from psych_runtime._surface._stream import stream
from psych_runtime.runtime import dispatch, load_spec

ScopedFor = Callable[[Request], ScopedStore | Awaitable[ScopedStore]]
"""Turns an HTTP request into the store as its caller may see it (sync or async)."""

_REQUEST = "psych.request"
_CANCEL_KEY = "a2a:cancel"
_SETTLED = TERMINAL | INTERRUPTED


class _KeepRequest(DefaultServerCallContextBuilder):
    """The SDK's default call context, with the HTTP request kept for `scoped`."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[_REQUEST] = request
        return context


class RunRequestHandler(RequestHandler):
    """An A2A request handler that admits and reads runs of `spec` (see the module
    docstring for what each A2A method does).

    Pass it to the SDK's route builders with its `context_builder`::

        handler = RunRequestHandler(spec, scoped=scoped_store)
        routes = create_jsonrpc_routes(handler, "/a2a", context_builder=handler.context_builder)

    Args:
        spec: the agent (or workflow) whose runs A2A clients start.
        scoped: the store as the request's caller may see it: authenticate there, and take
            the tenant (and principal) from who the caller is, never from what they send.
            It may raise the app's own HTTP error (401, 403).
        wait: how long a blocking message send (the A2A default) or a cancel waits for the
            run to end or to need input before answering with the task as it stands, in
            seconds. A send with ``return_immediately`` answers at once.
        poll: how often to look at the log when the store cannot say when it changed
            (`stream`'s ``poll``), in seconds.
    """

    def __init__(
        self,
        spec: AgentSpec | WorkflowSpec,
        scoped: ScopedFor,
        *,
        wait: float = 30.0,
        poll: float = 0.2,
    ) -> None:
        self.spec = spec
        self.scoped = scoped
        self.wait = wait
        self.poll = poll

    @property
    def context_builder(self) -> ServerCallContextBuilder:
        """The call-context builder the routes must be built with: it hands this handler
        the HTTP request, for `scoped`."""
        return _KeepRequest()

    # -- the A2A methods -------------------------------------------------------------------

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        """Start a run (or answer or tell a run of the task); unless the request says
        ``return_immediately``, wait up to `wait` seconds for it to end or need input."""
        validate_proto_required_fields(params)
        store = await self._store(context)
        with _translated():
            run_id, sent_after = await self._deliver(store, params.message)
            task = await self._read(store, run_id)
            if not params.configuration.return_immediately:
                task = await self._settle(store, task, sent_after, _SETTLED)
        shown = task_of(task, _shown(task, sent_after))
        return apply_history_length(shown, params.configuration)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """Start a run (or answer or tell one), then stream its task: the task first, then a
        status update at each change of state, until it ends or needs input."""
        validate_proto_required_fields(params)
        store = await self._store(context)
        with _translated():
            run_id, sent_after = await self._deliver(store, params.message)
            task = await self._read(store, run_id)
        async for event in self._events(store, task, sent_after):
            yield event

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """Stream a task that has not ended, as `on_message_send_stream` does."""
        validate_proto_required_fields(params)
        store = await self._store(context)
        with _translated():
            task = await self._read(store, params.id)
        if state_of(task) in TERMINAL:
            raise UnsupportedOperationError(
                message=f"task {params.id} has ended ({_name(state_of(task))}): there is "
                "nothing more to stream; get it instead"
            )
        async for event in self._events(store, task, -1):
            yield event

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        """The task of run `params.id`, folded from its log."""
        validate_proto_required_fields(params)
        store = await self._store(context)
        with _translated():
            task = await self._read(store, params.id)
        return apply_history_length(task_of(task), params)

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        """Cancel the run, then wait up to `wait` seconds for a worker to end it."""
        validate_proto_required_fields(params)
        store = await self._store(context)
        with _translated():
            task = await self._read(store, params.id)
            if state_of(task) in TERMINAL:
                raise TaskNotCancelableError(
                    message=f"task {params.id} has already ended ({_name(state_of(task))})"
                )
            try:
                principal = store.scope.principal
                await cancel(
                    store, params.id, "cancelled by an A2A client", by=principal, key=_CANCEL_KEY
                )
            except DuplicateSignal:
                pass  # cancelled already, by an earlier request: wait for it all the same
            except RunFinished:
                task = await self._read(store, params.id)
                raise TaskNotCancelableError(
                    message=f"task {params.id} has already ended ({_name(state_of(task))})"
                ) from None
            task = await self._settle(store, task, task.last_seq, TERMINAL)
        return task_of(task)

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """Not offered: list runs with the app's own routes."""
        raise UnsupportedOperationError(message="this agent does not list tasks")

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Not offered: Psych streams runs from their log; it sends no notifications."""
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Not offered (see `on_create_task_push_notification_config`)."""
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        """Not offered (see `on_create_task_push_notification_config`)."""
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        """Not offered (see `on_create_task_push_notification_config`)."""
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        """Not offered: the public card (`agent_card`) is the only one."""
        raise ExtendedAgentCardNotConfiguredError

    # -- how ---------------------------------------------------------------------------------

    async def _store(self, context: ServerCallContext) -> ScopedStore:
        request = context.state.get(_REQUEST)
        if not isinstance(request, Request):
            raise InternalError(
                message="RunRequestHandler got no HTTP request: build its routes with "
                "context_builder=handler.context_builder"
            )
        found = self.scoped(request)
        store = await found if inspect.isawaitable(found) else found
        if not isinstance(store, ScopedStore):
            raise InternalError(
                message=f"scoped() returned {type(store).__name__}, not a ScopedStore: return "
                "store.scoped(Scope(tenant=...)) for the request's caller"
            )
        return store

    async def _read(self, store: ScopedStore, run_id: str) -> RunTask:
        """The task of run `run_id`; a run of another agent is no task of this one."""
        if not run_id:
            raise InvalidParamsError(message="a task id is required")
        records = await read_log(store, run_id)
        admitted = records[0].body if records else None
        if not isinstance(admitted, RunAdmitted) or admitted.agent != self.spec.name:
            raise TaskNotFoundError(message=f"no task {run_id}")
        spec = self.spec
        if admitted.spec_version != spec.version:  # admitted before the spec last changed
            spec = await load_spec(store, run_id, records)
        return RunTask.of(run_id, records, spec)

    async def _deliver(self, store: ScopedStore, message: Message) -> tuple[str, int]:
        """Hand `message` to Psych; return the run it went to and the seq of the last record
        before it (-1 for a new run)."""
        key = f"a2a:{message.message_id}" if message.message_id else None
        if not message.task_id:
            run_id = await dispatch(store, self.spec, message_text(message), idempotency_key=key)
            return run_id, -1
        task = await self._read(store, message.task_id)
        state = state_of(task)
        run_id = message.task_id
        if state in TERMINAL:
            raise UnsupportedOperationError(
                message=f"task {run_id} has ended ({_name(state)}); a message cannot continue "
                "it: send one without a task id to start another task"
            )
        if state == TaskState.TASK_STATE_AUTH_REQUIRED:
            raise UnsupportedOperationError(
                message=f"task {run_id} waits for a person's decision (approve, deny or "
                "continue_run), which a message cannot give"
            )
        try:
            if state == TaskState.TASK_STATE_INPUT_REQUIRED:
                call_id, tool = answered_by_message(task.state)[0]
                if tool == HUMAN_TOOL:
                    await answer(store, run_id, call_id, message_payload(message), key=key)
                else:
                    await resume(store, run_id, message_payload(message), key=key)
            elif isinstance(self.spec, WorkflowSpec):
                raise UnsupportedOperationError(
                    message=f"task {run_id} is a workflow at work: it takes a message only "
                    "when it asks for input"
                )
            else:
                await interrupt(store, run_id, message_text(message), key=key)
        except DuplicateSignal:
            pass  # the same message, sent again: it was delivered the first time
        except RunFinished:
            raise UnsupportedOperationError(
                message=f"task {run_id} ended before the message reached it"
            ) from None
        return run_id, task.last_seq

    async def _settle(
        self, store: ScopedStore, task: RunTask, sent_after: int, until: frozenset[TaskState]
    ) -> RunTask:
        """Follow the run's log until its task reaches a state in `until`, for at most
        `wait` seconds; the task as it then stands."""
        if _shown(task, sent_after) in until:
            return task
        try:
            async with asyncio.timeout(self.wait):
                records = _records(store, task.run_id, task.last_seq, self.poll)
                async with aclosing(records):
                    async for record in records:
                        task.add(record)
                        if _shown(task, sent_after) in until:
                            break
        except TimeoutError:
            pass
        except CorruptLog:
            pass  # the task reads `failed` from the records before it
        return task

    async def _events(
        self, store: ScopedStore, task: RunTask, sent_after: int
    ) -> AsyncGenerator[Event]:
        shown = _shown(task, sent_after)
        yield task_of(task, shown)
        if shown in _SETTLED:
            return
        records = _records(store, task.run_id, task.last_seq, self.poll)
        async with aclosing(records):
            try:
                async for record in records:
                    task.add(record)
                    now = _shown(task, sent_after)
                    if now == shown:
                        continue
                    shown = now
                    if now == TaskState.TASK_STATE_COMPLETED:
                        yield artifact_event(task)
                    yield status_event(task, now)
                    if now in _SETTLED:
                        return
            except CorruptLog as corrupt:
                task.corrupt = str(corrupt)
                yield status_event(task, TaskState.TASK_STATE_FAILED)


def _shown(task: RunTask, sent_after: int) -> TaskState:
    """The state to show: a run that still waits on what a message just answered (no record
    after the message yet) is shown ``working``, not as asking again."""
    state = state_of(task)
    if state in INTERRUPTED and task.last_seq <= sent_after:
        return TaskState.TASK_STATE_WORKING
    return state


def _records(store: ScopedStore, run_id: str, after: int, poll: float) -> AsyncGenerator[Record]:
    """`stream` as the async generator it is, so that it can be closed early."""
    return cast("AsyncGenerator[Record]", stream(store, run_id, after, poll=poll))


def _name(state: TaskState) -> str:
    return str(TaskState.Name(state)).removeprefix("TASK_STATE_").lower().replace("_", "-")


@contextmanager
def _translated() -> Iterator[None]:
    """Psych's errors as the A2A errors a client can act on."""
    try:
        yield
    except RunNotFound as error:
        raise TaskNotFoundError(message=f"no task {error.run_id}") from None
    except PolicyDenied as error:
        raise InvalidRequestError(message=str(error)) from None
    except (IdempotencyConflict, SpecError) as error:
        raise InvalidParamsError(message=str(error)) from None
