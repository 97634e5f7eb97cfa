"""The remote cancel sent when an A2A call is cut off: never raised (the call has ended), and
when it fails the warning says why, the peer's error or the time it was given. The client
here injects the fault; the real peer's cancel is in `tests/integration/test_a2a_peer.py`."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import pytest
from a2a.client import Client
from a2a.types import CancelTaskRequest
from a2a.utils.errors import TaskNotCancelableError

from psych_runtime.tools._a2a import _skills

WHERE = "A2A peer 'peer' skill 'slow'"


class _Client:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.asked: list[str] = []

    async def cancel_task(self, request: CancelTaskRequest) -> None:
        self.asked.append(request.id)
        if self.answer == "hang":
            await asyncio.sleep(60)
        elif isinstance(self.answer, BaseException):
            raise self.answer


async def _cancel(answer: Any) -> _Client:
    client = _Client(answer)
    await _skills._cancel(cast(Client, client), "task-7", WHERE)
    return client


async def test_a_cancel_the_peer_accepts_is_logged_as_done(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="psych_runtime.a2a"):
        client = await _cancel(None)
    assert client.asked == ["task-7"]
    assert [r.getMessage() for r in caplog.records] == [f"{WHERE}: cancelled remote task task-7"]


async def test_a_cancel_the_peer_refuses_names_the_peers_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refusal = TaskNotCancelableError(message="Task cannot be canceled - current state: DONE")
    with caplog.at_level(logging.INFO, logger="psych_runtime.a2a"):
        await _cancel(refusal)
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        f"{WHERE}: remote task task-7 could not be cancelled (TaskNotCancelableError: "
        "Task cannot be canceled - current state: DONE)"
    )


async def test_a_cancel_without_an_answer_names_the_time_it_was_given(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_skills, "CLEANUP_TIMEOUT", 0.05)
    with caplog.at_level(logging.INFO, logger="psych_runtime.a2a"):
        await _cancel("hang")
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        f"{WHERE}: remote task task-7 could not be cancelled (no answer within 0.05 s)"
    )


async def test_a_cancel_of_the_cancel_itself_is_not_swallowed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # `aclose` cancels what is still running past its wait: that must end the task, not be
    # logged as a failed cancel.
    with caplog.at_level(logging.INFO, logger="psych_runtime.a2a"):
        task = asyncio.create_task(_cancel("hang"))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert caplog.records == []
