"""Starting the server, and the server and a worker together (`dev`)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from types import FrameType

import uvicorn

from psych_playground.app import create_app
from psych_playground.settings import Settings
from psych_playground.stores import display_url

NOT_FOR_THE_INTERNET = (
    "psych-playground: WARNING: listening on {host}, not only on this machine. The playground "
    "is an example with no authentication: anyone who reaches it can read every run and "
    "approve, answer or cancel them. Do not expose it to the internet."
)


def serve(settings: Settings) -> None:
    """Serve the API and the UI until SIGINT or SIGTERM."""
    if not settings.loopback_only:
        print(NOT_FOR_THE_INTERNET.format(host=settings.host), file=sys.stderr, flush=True)
    print(
        f"psych-playground: http://{settings.host}:{settings.port} on "
        f"{display_url(settings.store_url)}, tenant {settings.tenant!r}, "
        f"{settings.model_kind} model (an example, not for the internet)",
        flush=True,
    )
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        access_log=False,
        # Live streams stay open while their runs go on: do not wait for them on the way out.
        timeout_graceful_shutdown=3,
    )


def run_dev(settings: Settings) -> int:
    """Run `serve` and `worker` as two child processes until Ctrl-C (or SIGTERM), or until one
    of them exits; stop the other then. Returns the exit code to leave with."""
    command = [sys.executable, "-m", "psych_playground"]
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    # Ctrl-C is a request to stop like SIGTERM, and a second one (a terminal, or `uv run`
    # passing it on) changes nothing while the children are being stopped.
    previous = {number: signal.signal(number, stop) for number in (signal.SIGTERM, signal.SIGINT)}
    children = [subprocess.Popen([*command, "worker"]), subprocess.Popen([*command, "serve"])]
    print(
        f"psych-playground dev: open http://{settings.host}:{settings.port} "
        "(Ctrl-C stops the server and the worker)",
        flush=True,
    )
    code = 0
    try:
        while not stopping:
            ended = [child for child in children if child.poll() is not None]
            if ended:
                code = ended[0].returncode or 0
                break
            time.sleep(0.2)
    finally:
        _stop(children)
        for number, handler in previous.items():
            signal.signal(number, handler)
    return code


def _stop(children: list[subprocess.Popen[bytes]], grace: float = 10.0) -> None:
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for child in children:
        try:
            child.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
