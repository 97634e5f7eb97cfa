"""A sum of `Usage` is built without validating its counts again, and is what `Usage(...)` of
the same counts is."""

from __future__ import annotations

import itertools

from psych_core import Usage

SAMPLES = [
    Usage(),
    Usage(input=5, output=3),
    Usage(input=1, output=2, cache_read=3, cache_write=4, cache_write_1h=5, reasoning=6),
    Usage(input=10**15, output=10**12, reasoning=7),
]


def validated_sum(a: Usage, b: Usage) -> Usage:
    return Usage(**{name: getattr(a, name) + getattr(b, name) for name in Usage.model_fields})


def test_a_sum_is_the_validated_usage_of_the_same_counts() -> None:
    for a, b in itertools.product(SAMPLES, repeat=2):
        made, expected = a + b, validated_sum(a, b)
        assert made == expected
        assert made.model_dump_json() == expected.model_dump_json()
        assert made.model_fields_set == expected.model_fields_set
        assert all(type(getattr(made, name)) is int for name in Usage.model_fields)
        assert hash(made) == hash(expected)


def test_sums_do_not_share_what_they_hold() -> None:
    first, second = SAMPLES[1] + SAMPLES[2], SAMPLES[1] + SAMPLES[2]
    assert first.model_fields_set is not second.model_fields_set
    assert first.__dict__ is not second.__dict__
    assert sum(SAMPLES, Usage()).total == sum(usage.total for usage in SAMPLES)
