"""The adapter kit's `SpecTexts`: a store reads a spec version once and writes it once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from psych_adapter_kit import SpecTexts


class _Database:
    """A spec table that counts what it is asked."""

    def __init__(self) -> None:
        self.rows: dict[str, str] = {}
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.fail_writes = False

    def read(self, version: str) -> Callable[[], Awaitable[str | None]]:
        async def ask() -> str | None:
            self.reads.append(version)
            return self.rows.get(version)

        return ask

    def write(self, version: str, text: str) -> Callable[[], Awaitable[None]]:
        async def put() -> None:
            self.writes.append(version)
            if self.fail_writes:
                raise ConnectionError("the database went away")
            self.rows.setdefault(version, text)

        return put


async def test_a_version_read_once_is_not_read_again() -> None:
    db, specs = _Database(), SpecTexts()
    db.rows["sha256:a"] = '{"name": "a"}'
    assert await specs.get("sha256:a", db.read("sha256:a")) == '{"name": "a"}'
    assert await specs.get("sha256:a", db.read("sha256:a")) == '{"name": "a"}'
    assert db.reads == ["sha256:a"]


async def test_a_version_not_found_is_asked_again() -> None:
    db, specs = _Database(), SpecTexts()
    assert await specs.get("sha256:a", db.read("sha256:a")) is None
    db.rows["sha256:a"] = '{"name": "a"}'  # stored meanwhile by another process
    assert await specs.get("sha256:a", db.read("sha256:a")) == '{"name": "a"}'
    assert db.reads == ["sha256:a", "sha256:a"]


async def test_a_version_written_or_read_is_not_written_again() -> None:
    db, specs = _Database(), SpecTexts()
    await specs.put("sha256:a", db.write("sha256:a", '{"name": "a"}'))
    await specs.put("sha256:a", db.write("sha256:a", '{"name": "a"}'))
    db.rows["sha256:b"] = '{"name": "b"}'
    await specs.get("sha256:b", db.read("sha256:b"))
    await specs.put("sha256:b", db.write("sha256:b", '{"name": "b"}'))
    assert db.writes == ["sha256:a"]


async def test_a_write_that_failed_is_tried_again() -> None:
    db, specs = _Database(), SpecTexts()
    db.fail_writes = True
    with pytest.raises(ConnectionError):
        await specs.put("sha256:a", db.write("sha256:a", "{}"))
    db.fail_writes = False
    await specs.put("sha256:a", db.write("sha256:a", "{}"))
    assert db.writes == ["sha256:a", "sha256:a"]
    assert db.rows == {"sha256:a": "{}"}


async def test_a_write_does_not_stand_for_a_read() -> None:
    # The text written may not be the one stored (a version stored already is left as it
    # is), so a read after a write still asks the database.
    db, specs = _Database(), SpecTexts()
    db.rows["sha256:a"] = '{"name": "a"}'
    await specs.put("sha256:a", db.write("sha256:a", '{"name":"a"}'))
    assert await specs.get("sha256:a", db.read("sha256:a")) == '{"name": "a"}'
    assert db.reads == ["sha256:a"]


async def test_what_is_kept_is_bounded() -> None:
    db, specs = _Database(), SpecTexts(kept=2)
    for name in "abc":
        db.rows[f"sha256:{name}"] = name
        await specs.get(f"sha256:{name}", db.read(f"sha256:{name}"))
    # Past two versions the memory was emptied: "c" is kept, "a" is read again.
    await specs.get("sha256:c", db.read("sha256:c"))
    await specs.get("sha256:a", db.read("sha256:a"))
    assert db.reads == ["sha256:a", "sha256:b", "sha256:c", "sha256:a"]


def test_keeping_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="kept must be at least 1"):
        SpecTexts(kept=0)
