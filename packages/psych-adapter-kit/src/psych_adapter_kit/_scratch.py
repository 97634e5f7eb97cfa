"""Scratch folders: one per execution, holding the request's files, always removed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from psych_core import ExecRequest


@contextlib.asynccontextmanager
async def scratch_folder(
    request: ExecRequest, *, root: str | None = None, owner: tuple[int, int] | None = None
) -> AsyncIterator[str]:
    """A fresh folder for one execution of `request`, removed with all it holds afterwards.

    The folder is private to this process's user (mode 0700, made by `tempfile.mkdtemp` under
    `root`, the system's temp folder by default) and holds `request.files` at their relative
    paths and the `request.cwd` folder. With `owner` (``(uid, gid)``; only a root caller can
    give one), the folder and everything in it belong to that user, so a program running as it
    can write there.

    Who releases what: the context manager does. When the block ends, however it ends (an
    error, a cancellation), the folder is removed with whatever the program left in it; a
    folder that could not be filled is removed before the error propagates. The disk work runs
    in a thread, so the event loop never waits on it.

    Yields:
        The folder's absolute path.
    """
    scratch = await asyncio.to_thread(_make, request, root, owner)
    try:
        yield scratch
    finally:
        # In a thread that finishes even when the awaiting task is cancelled meanwhile.
        await asyncio.to_thread(shutil.rmtree, scratch, True)


def _make(request: ExecRequest, root: str | None, owner: tuple[int, int] | None) -> str:
    scratch = tempfile.mkdtemp(prefix="psych-sandbox-", dir=root)
    try:
        base = Path(scratch)
        for rel, content in request.files.items():
            path = base / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        (base / request.cwd).mkdir(parents=True, exist_ok=True)
        if owner is not None:
            for directory, dirs, files in os.walk(scratch):
                os.chown(directory, *owner)
                for name in (*dirs, *files):
                    os.chown(os.path.join(directory, name), *owner, follow_symlinks=False)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return scratch
