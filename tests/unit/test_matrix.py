"""The compatibility matrix picks, for each adapter, the oldest and the newest psych-core wheel
its range admits (`scripts/matrix.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from scripts import matrix


def _wheels(folder: Path, *names: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(b"")
    return folder


def test_each_adapter_runs_with_both_ends_of_its_range(tmp_path: Path) -> None:
    released = _wheels(
        tmp_path / "released",
        "psych_core-0.1.0-py3-none-any.whl",
        "psych_core-0.1.3-py3-none-any.whl",
        "psych_core-0.2.0-py3-none-any.whl",  # outside every adapter's range
        "psych_core_extra-9.0.0-py3-none-any.whl",  # another distribution's name
    )
    assert matrix.wheel_versions([released], "psych-core") == [
        Version("0.1.0"),
        Version("0.1.3"),
        Version("0.2.0"),
    ]
    cells = matrix.cells([released], {"psych-store-sqlite"})
    assert [str(cell.core) for cell in cells] == ["0.1.0", "0.1.3"]
    assert {cell.adapter for cell in cells} == {"psych-store-sqlite"}


def test_one_release_of_the_core_is_one_run_per_adapter(tmp_path: Path) -> None:
    only = _wheels(tmp_path / "wheelhouse", "psych_core-0.1.0-py3-none-any.whl")
    cells = matrix.cells([only], set())
    assert sorted(cell.adapter for cell in cells) == sorted(matrix.SUITES)
    assert {str(cell.core) for cell in cells} == {"0.1.0"}


def test_a_range_no_wheel_satisfies_stops_the_matrix(tmp_path: Path) -> None:
    newer = _wheels(tmp_path / "wheelhouse", "psych_core-0.2.0-py3-none-any.whl")
    with pytest.raises(SystemExit, match="no psych-core wheel"):
        matrix.cells([newer], {"psych-store-sqlite"})


def test_every_adapter_distribution_has_a_suite() -> None:
    adapters = {
        path.parent.name
        for path in (Path(matrix.ROOT) / "packages").glob("*/pyproject.toml")
        if path.parent.name.startswith(
            ("psych-store-", "psych-blob-", "psych-sandbox-", "psych-telemetry-")
        )
    }
    assert set(matrix.SUITES) == adapters
    for tests in matrix.SUITES.values():
        assert all((Path(matrix.ROOT) / test).exists() for test in tests)


def test_the_flavours_read_pytests_skip_reasons() -> None:
    from scripts import flavours

    line = (
        "SKIPPED [1] tests/conftest.py:62: test_cli.py needs typer, not installed here: "
        "install psych-cli"
    )
    assert flavours._SKIP.findall(f"....\n{line}\n3 passed") == [line.split(": ", 1)[1]]
    names = [flavour.name for flavour in flavours.FLAVOURS]
    assert len(names) == len(set(names)) == 3
