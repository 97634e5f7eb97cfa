"""Every record body type, for tests that must cover each one (a new type fails them until it
is covered)."""

from __future__ import annotations

import typing

from pydantic import BaseModel

from psych_core import Body

BODY_TYPES: tuple[type[BaseModel], ...] = typing.get_args(typing.get_args(Body)[0])
"""The members of the `Body` union (``Annotated[A | B | ..., discriminator]``)."""
