"""Usage and cost as an OpenAI-compatible API reports them, in Psych's terms."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from psych_core import Cost, Usage


def usage_from_openai(raw: Any) -> Usage | None:
    """The `Usage` in an OpenAI-compatible ``usage`` object, or None when it says nothing.

    Read: ``prompt_tokens``, ``prompt_tokens_details.cached_tokens`` (or a gateway's
    ``cache_read_input_tokens``), ``completion_tokens``,
    ``completion_tokens_details.reasoning_tokens``, and the cache writes gateways add:
    ``cache_creation_input_tokens`` (all writes) and ``cache_creation.ephemeral_1h_input_tokens``
    (the hour-long ones), or ``prompt_tokens_details.cache_write_tokens``.

    ``prompt_tokens`` counts the whole prompt, so `Usage.input` is what is left of it after
    the cache reads and writes (never below zero): no token is counted twice. A usage object
    without token counts, or with counts that are not non-negative integers, is None:
    unknown, never zero.
    """
    if not isinstance(raw, Mapping):
        return None
    prompt = _count(raw.get("prompt_tokens"))
    completion = _count(raw.get("completion_tokens"))
    if prompt is None and completion is None:
        return None
    if prompt is None or completion is None:
        # Half a usage report is not a measurement of the other half.
        return None
    prompt_details = _mapping(raw.get("prompt_tokens_details"))
    completion_details = _mapping(raw.get("completion_tokens_details"))
    creation = _mapping(raw.get("cache_creation"))

    cached = _count(prompt_details.get("cached_tokens"))
    if cached is None:
        cached = _count(raw.get("cache_read_input_tokens")) or 0
    write_1h = _count(creation.get("ephemeral_1h_input_tokens")) or 0
    written = _count(raw.get("cache_creation_input_tokens"))
    if written is None:
        written = _count(prompt_details.get("cache_write_tokens"))
    if written is None:
        written = (_count(creation.get("ephemeral_5m_input_tokens")) or 0) + write_1h
    write_1h = min(write_1h, written)
    return Usage(
        input=max(prompt - cached - written, 0),
        output=completion,
        cache_read=cached,
        cache_write=written - write_1h,
        cache_write_1h=write_1h,
        reasoning=_count(completion_details.get("reasoning_tokens")) or 0,
    )


def cost_from_openai(raw: Any) -> Cost | None:
    """The cost a gateway reports in ``usage.cost`` (OpenRouter does, in USD), or None."""
    if not isinstance(raw, Mapping):
        return None
    value = raw.get("cost")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        return None
    if not amount.is_finite() or amount < 0:
        return None
    return Cost(amount=amount, currency="USD", source="provider")


def _count(value: Any) -> int | None:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # some servers write 12.0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
