"""Tokens used and what they cost."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from psych_core._unvalidated import unvalidated

UsageSource = Literal["provider", "estimated", "missing"]
"""Where usage numbers came from. ``missing`` is never shown as a measured zero."""

CostSource = Literal["provider", "snapshot", "override", "mixed"]
"""Where a price came from: the provider's answer, the bundled dated table, or the app.

``mixed`` appears only on a total whose calls were priced from different sources.
"""


class Usage(BaseModel):
    """Tokens one model call (or a sum of calls) used, by kind.

    `input` counts uncached input only, so no token is counted twice: the whole prompt is
    ``input + cache_read + cache_write + cache_write_1h``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: int = Field(default=0, ge=0)
    output: int = Field(default=0, ge=0)
    cache_read: int = Field(default=0, ge=0)
    cache_write: int = Field(default=0, ge=0)
    cache_write_1h: int = Field(default=0, ge=0)
    reasoning: int = Field(default=0, ge=0)

    def __add__(self, other: Usage) -> Usage:
        """The sum, field by field. Sums of counts that were validated (integers, none below
        zero) are valid counts, so the sum is built without validating them again (a third of
        the cost; every model turn adds its usage to the run's): equal to ``Usage(...)`` of the
        same numbers, and serialised to the same bytes."""
        counts = {
            "input": self.input + other.input,
            "output": self.output + other.output,
            "cache_read": self.cache_read + other.cache_read,
            "cache_write": self.cache_write + other.cache_write,
            "cache_write_1h": self.cache_write_1h + other.cache_write_1h,
            "reasoning": self.reasoning + other.reasoning,
        }
        return unvalidated(Usage, counts, set(counts))

    @property
    def total(self) -> int:
        """All tokens, each counted once (reasoning is part of output)."""
        return self.input + self.cache_read + self.cache_write + self.cache_write_1h + self.output

    def __str__(self) -> str:
        return (
            f"input={self.input} output={self.output} cache_read={self.cache_read} "
            f"cache_write={self.cache_write} cache_write_1h={self.cache_write_1h} "
            f"reasoning={self.reasoning}"
        )


class Cost(BaseModel):
    """An amount of money, exact, with where its price came from.

    A cost that is not known is ``None`` wherever a `Cost` could stand, never zero.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    amount: Decimal
    currency: str = "USD"
    source: CostSource
    as_of: dt.date | None = None

    def __str__(self) -> str:
        # Fixed-point, never exponent form: 0.0000004, not 4E-7.
        return f"{self.amount:f} {self.currency} ({self.source})"
