"""`ModelFailure`: one failed attempt at a model call (its own module: the errors name it too)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ModelFailure:
    """One attempt at a model call that failed; the runtime records each as `ModelCallFailed`.

    Attributes:
        model: the model that was asked.
        reason: a short, readable account of what went wrong (``"HTTP 429: rate limited"``),
            with no secret in it.
        status: the HTTP status, when the provider answered with one.
        retryable: whether asking again later may succeed (429, 5xx, a dropped connection).
    """

    model: str
    reason: str
    status: int | None = None
    retryable: bool = False
