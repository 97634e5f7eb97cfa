"""A scripted OpenAI-compatible chat completions server, run by uvicorn on 127.0.0.1.

Each test queues the replies the server gives, in order (`ChatServer.reply`), and reads back
what it was sent (`ChatServer.requests`). Replies are plain JSON, server-sent event streams
(finished, cut short cleanly, or aborted mid-body), or raw bytes, with any status and headers;
or a reply that never ends, dripping keep-alive bytes until the client hangs up.
The server fills in ``model`` from the request wherever a reply leaves it out, so a test can
tell which model was asked.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from psych_runtime import OpenAIChatClient

Json = dict[str, Any]

API_KEY = "sk-test-9f8e7d6c5b4a39281706"
"""The API key the `make_client` fixture's clients send (from a secret resolver)."""

MakeClient = Callable[..., OpenAIChatClient]
"""The `make_client` fixture: an OpenAIChatClient for the server, options as keywords."""


@dataclass
class Scripted:
    """One reply: status, headers, body pieces, and how to deliver them."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    json: Json | None = None
    events: list[Json | str] | None = None  # server-sent events; a str is sent as written
    raw: bytes | None = None
    done: bool = True  # end an event stream with [DONE]
    abort: bool = False  # drop the connection after the body pieces, mid-response
    delay: float = 0.0  # seconds before answering
    # Seconds between keep-alive bytes sent after the events (a comment line) or instead of
    # the JSON body (a space, which JSON allows), until the client hangs up: never done.
    drip: float = 0.0
    # Hold the event stream before events[hold_at] until the test sets `release` (a test in
    # another thread or, through the server, another process holds the end of an answer).
    hold_at: int | None = None
    release: threading.Event | None = None


@dataclass
class Received:
    """A request the server was sent."""

    path: str
    headers: dict[str, str]
    body: Json


class ChatServer:
    """The server; use it through `serve()`."""

    def __init__(self) -> None:
        self.replies: deque[Scripted] = deque()
        self.requests: list[Received] = []
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def reset(self) -> None:
        """Forget every scripted reply and received request."""
        self.replies.clear()
        self.requests.clear()

    def reply(self, *replies: Scripted) -> ChatServer:
        self.replies.extend(replies)
        return self

    @property
    def models_asked(self) -> list[str]:
        return [request.body.get("model", "") for request in self.requests]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        try:
            body = json.loads(b"".join(chunks) or b"{}")
        except ValueError:
            body = {"unreadable": b"".join(chunks).decode("utf-8", "replace")}
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        self.requests.append(Received(scope["path"], headers, body))
        if not self.replies:
            await _send(send, 500, {}, b'{"error": {"message": "no scripted reply left"}}')
            return
        scripted = self.replies.popleft()
        if scripted.delay:
            await asyncio.sleep(scripted.delay)
        model = body.get("model", "")
        if scripted.events is not None:
            await self._stream(send, receive, scripted, model)
            return
        if scripted.drip:
            await _start(send, scripted.status, {"content-type": "application/json"})
            await _drip(send, receive, b" ", scripted.drip)
            return
        if scripted.json is not None:
            payload = json.dumps({"model": model, **scripted.json}).encode()
            content_type = "application/json"
        else:
            payload = scripted.raw or b""
            content_type = "text/plain"
        await _send(
            send, scripted.status, {"content-type": content_type, **scripted.headers}, payload
        )

    async def _stream(self, send: Any, receive: Any, scripted: Scripted, model: str) -> None:
        headers = {"content-type": "text/event-stream", **scripted.headers}
        await _start(send, scripted.status, headers)
        assert scripted.events is not None
        for index, event in enumerate(scripted.events):
            if index == scripted.hold_at and scripted.release is not None:
                await _held(scripted.release)
            if isinstance(event, str) and event.startswith(":"):
                line = event  # a comment line, as servers send to keep a connection alive
            else:
                data = event if isinstance(event, str) else json.dumps({"model": model, **event})
                line = f"data: {data}"
            body = f"{line}\n\n".encode()
            await send({"type": "http.response.body", "body": body, "more_body": True})
        if scripted.abort:
            return  # uvicorn drops the connection: the response never completes
        if scripted.drip:
            await _drip(send, receive, b": keep-alive\n\n", scripted.drip)
            return
        tail = b"data: [DONE]\n\n" if scripted.done else b""
        await send({"type": "http.response.body", "body": tail, "more_body": False})


async def _start(send: Any, status: int, headers: dict[str, str]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
        }
    )


async def _send(send: Any, status: int, headers: dict[str, str], body: bytes) -> None:
    await _start(send, status, headers)
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _held(release: threading.Event, seconds: float = 60.0) -> None:
    """Wait for the test to set `release` (at most `seconds`, so a failed test frees the
    server's thread)."""
    await asyncio.to_thread(release.wait, seconds)


async def _drip(send: Any, receive: Any, keep_alive: bytes, every: float) -> None:
    """Send `keep_alive` every `every` seconds until the client hangs up (at most 10 minutes,
    so a client that never gives up cannot keep the server's thread alive forever)."""
    gone = asyncio.Event()

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        gone.set()

    watcher = asyncio.create_task(watch())
    try:
        for _ in range(int(600 / every)):
            await send({"type": "http.response.body", "body": keep_alive, "more_body": True})
            try:
                await asyncio.wait_for(gone.wait(), every)
                return
            except TimeoutError:
                pass
    finally:
        watcher.cancel()


@contextmanager
def serve() -> Iterator[ChatServer]:
    """Run a fresh `ChatServer` on 127.0.0.1 (an ephemeral port) in a thread of its own."""
    app = ChatServer()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    app.port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, lifespan="off", ws="none", http="h11", log_level="critical", access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the scripted chat server did not start")
        time.sleep(0.01)
    try:
        yield app
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


# -- replies ---------------------------------------------------------------------------------


def usage(
    prompt: int = 10,
    completion: int = 5,
    *,
    cached: int | None = None,
    reasoning: int | None = None,
    **extra: Any,
) -> Json:
    out: Json = {"prompt_tokens": prompt, "completion_tokens": completion}
    out["total_tokens"] = prompt + completion
    if cached is not None:
        out["prompt_tokens_details"] = {"cached_tokens": cached}
    if reasoning is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    out.update(extra)
    return out


def tool_call(name: str, arguments: str | Json, call_id: str = "call_1") -> Json:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def completion(
    text: str | None = None,
    *,
    tool_calls: list[Json] | None = None,
    finish: str | None = None,
    usage_: Json | None = None,
    **extra: Any,
) -> Scripted:
    message: Json = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body: Json = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        **extra,
    }
    if usage_ is not None:
        body["usage"] = usage_
    return Scripted(json=body)


def chunk(delta: Json | None = None, finish: str | None = None) -> Json:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }


def usage_chunk(usage_: Json) -> Json:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": usage_}


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Scripted:
    return Scripted(status=status, headers=headers or {}, json={"error": {"message": message}})
