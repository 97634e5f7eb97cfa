"""Who a call is for."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Scope(BaseModel):
    """Who a call is for: stores partition runs by `tenant`, and no scope sees another's runs.

    Attributes:
        tenant: the partition every run belongs to; required.
        principal: the person or service acting, when known.
        attributes: anything a `Policy` wants to decide on (role, plan, region).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: str = Field(min_length=1)
    principal: str | None = None
    attributes: dict[str, str] = Field(default_factory=dict)
