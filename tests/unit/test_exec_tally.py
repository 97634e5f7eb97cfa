"""`ExecTally`: the grade accumulator and result assembly every sandbox backend shares."""

from __future__ import annotations

import pytest

from psych_core import GUARANTEES, ExecLimits, ExecRequest, ExecTally


def _all_enforced(backend: str = "test") -> ExecTally:
    tally = ExecTally(backend)
    for guarantee in GUARANTEES:
        tally.grade(guarantee, "enforced")
    return tally


def test_output_is_kept_up_to_the_cap_and_marks_the_limit() -> None:
    tally = ExecTally("test")
    assert tally.keep("stdout", b"abc", cap=5)
    assert not tally.keep("stdout", b"defg", cap=5)
    assert not tally.keep("stdout", b"more", cap=5)
    assert tally.keep("stderr", b"12345", cap=5)
    assert (bytes(tally.stdout), bytes(tally.stderr)) == (b"abcde", b"12345")
    assert (tally.stdout_truncated, tally.stderr_truncated) == (True, False)
    assert tally.limit_hit == "output"


def test_the_first_limit_that_stopped_the_program_stays() -> None:
    tally = ExecTally("test")
    tally.hit("wall_time")
    tally.keep("stderr", b"too much", cap=1)
    tally.hit("cpu_time")
    assert tally.limit_hit == "wall_time"
    assert tally.stderr_truncated


@pytest.mark.parametrize(
    ("status", "exit_code", "signal"),
    [
        (0, 0, None),
        (3, 3, None),
        (137, None, 9),
        (152, None, 24),
        (200, 200, None),
        (-1, None, None),
    ],
)
def test_a_shell_style_status_is_an_exit_code_or_a_signal(
    status: int, exit_code: int | None, signal: int | None
) -> None:
    tally = ExecTally("test")
    tally.ended_with_status(status)
    assert (tally.exit_code, tally.signal) == (exit_code, signal)


def test_limits_are_graded_from_the_request_and_what_setup_reported() -> None:
    tally = ExecTally("test")
    tally.grade_limit("cpu_time_limited", None, None)
    tally.grade_limit("memory_limited", 1 << 20, None)
    tally.grade_limit("process_count_limited", 8, "pids.max: Invalid argument")
    assert tally.grades == {
        "cpu_time_limited": "not_enforced",
        "memory_limited": "enforced",
        "process_count_limited": "not_enforced",
    }
    assert tally.reasons == {
        "cpu_time_limited": "the request sets no limit for it",
        "process_count_limited": "pids.max: Invalid argument",
    }


def test_checks_grade_enforced_only_without_problems() -> None:
    found, unread, clean = ExecTally("test"), ExecTally("test"), ExecTally("test")
    found.grade_checks("unprivileged", ["runs as root", "holds capabilities"])
    unread.grade_checks("unprivileged", ["capabilities could not be read"], "unknown")
    clean.grade("unprivileged", "unknown", "not checked yet")
    clean.grade_checks("unprivileged", [])
    assert found.grades == {"unprivileged": "not_enforced"}
    assert found.reasons == {"unprivileged": "runs as root; holds capabilities"}
    assert unread.grades == {"unprivileged": "unknown"}
    assert (clean.grades, clean.reasons) == ({"unprivileged": "enforced"}, {})


def test_the_rest_is_graded_without_touching_what_was_graded() -> None:
    tally = ExecTally("test")
    tally.grade("output_limited", "enforced")
    tally.grade_rest("unknown", "not graded")
    assert set(tally.grades) == set(GUARANTEES)
    assert tally.grades["output_limited"] == "enforced"
    assert "output_limited" not in tally.reasons
    assert tally.reasons["reads_confined"] == "not graded"


def test_the_result_carries_the_tally_and_the_level_its_grades_reach() -> None:
    tally = _all_enforced("kerneled")
    tally.keep("stdout", b"out", cap=10)
    tally.ended_with_status(0)
    result = tally.result(ExecRequest(argv=("true",), require_level="kernel"))
    assert (result.backend, result.level, result.ok) == ("kerneled", "kernel", True)
    assert (result.stdout, result.exit_code, result.withheld) == (b"out", 0, None)


def test_output_under_weaker_terms_than_required_is_withheld_with_the_reason() -> None:
    tally = _all_enforced()
    tally.grade("memory_limited", "not_enforced", "the memory cgroup could not be set up")
    tally.keep("stdout", b"SECRET", cap=10)
    tally.ended_with_status(0)
    request = ExecRequest(argv=("true",), require=frozenset({"memory_limited"}))
    assert tally.unmet(request) == ("memory_limited",)
    result = tally.result(request)
    assert result.withheld is not None
    assert "memory_limited is not_enforced (the memory cgroup could not be set up)" in (
        result.withheld
    )
    assert (result.stdout, result.exit_code) == (b"", None)
    assert result.grades["memory_limited"] == "not_enforced"


def test_a_result_needs_every_guarantee_graded() -> None:
    tally = ExecTally("forgetful")
    tally.grade("output_limited", "enforced")
    with pytest.raises(ValueError, match="forgetful does not grade"):
        tally.result(ExecRequest(argv=("true",), limits=ExecLimits(wall_seconds=1)))


def test_an_enforced_grade_drops_an_earlier_reason() -> None:
    tally = ExecTally("test")
    tally.grade("wall_time_limited", "unknown", "not checked yet")
    tally.grade("wall_time_limited", "enforced")
    assert (tally.grades["wall_time_limited"], tally.reasons) == ("enforced", {})
