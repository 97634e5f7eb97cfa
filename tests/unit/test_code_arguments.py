"""A code tool's arguments: the model's text in, the function's keyword arguments out.

Valid text goes into the arguments model in one pass (`model_validate_json`), unless a
parameter holds a `Decimal`; anything else takes the path that parses it first, so that what
is wrong is said the same way. Both must give the function the same values wherever both
accept the text.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel

from psych_runtime.tools import CodeFunction, InvalidArguments


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    city: str
    zip: str | None = None


async def book(
    order: int,
    note: str = "",
    ratio: float = 1.0,
    tags: tuple[str, ...] = (),
    counts: dict[str, int] | None = None,
    when: dt.datetime | None = None,
    colour: Colour = Colour.RED,
    ship_to: Address | None = None,
) -> None:
    """Book an order."""


async def pay(order: int, amount: Decimal, to: Address | None = None) -> None:
    """Pay for an order."""


TOOL = CodeFunction.of(book)
PAY = CodeFunction.of(pay)

VALID = [
    '{"order": 1}',
    '  {"order": 2, "note": "caf\\u00e9 \\"q\\""}  ',
    '{"order": "3"}',
    '{"order": 4, "ratio": 2}',
    '{"order": 5, "tags": ["a", "b"], "counts": {"x": 1, "y": "2"}}',
    '{"order": 6, "when": "2026-12-07T10:00:00Z", "colour": "blue"}',
    '{"order": 7, "ship_to": {"city": "Oslo"}}',
    '{"order": 8, "note": "\u00e9\u4e2d\U0001f600"}',
    '{"order": 9, "order": 10}',
    '{"order": 11, "ratio": 1e3}',
]

INVALID = [
    ("", "order: Field required"),
    ("   ", "order: Field required"),
    ('{"order": ', "arguments are not valid JSON"),
    ("[1, 2]", "arguments must be a JSON object, got list"),
    ('"text"', "arguments must be a JSON object, got str"),
    ("{}", "order: Field required"),
    ('{"order": "x"}', "order: Input should be a valid integer"),
    ('{"order": 1, "extra": 2}', "extra: Extra inputs are not permitted"),
    ('{"order": 1, "colour": "green"}', "colour: Input should be 'red' or 'blue'"),
]


def parsed_first(tool: CodeFunction, text: str) -> dict[str, Any]:
    """What the function received before: the text parsed by `json`, then validated."""
    raw = json.loads(text) if text.strip() else {}
    validated = tool.arguments_model.model_validate(raw)
    return {name: getattr(validated, name) for name in type(validated).model_fields}


@pytest.mark.parametrize("text", VALID)
def test_valid_arguments_give_what_parsing_first_gives(text: str) -> None:
    assert TOOL.validate(text) == parsed_first(TOOL, text)


@pytest.mark.parametrize("amount", ["2.0", "12.50", "1e2", "3", "1.00000000000000000001"])
def test_a_decimal_is_made_as_it_always_was(amount: str) -> None:
    # The one pass would make Decimal('2') of 2.0 where the float made Decimal('2.0'): a tool
    # with a Decimal parameter has its text parsed first, digit for digit as before.
    text = f'{{"order": 1, "amount": {amount}, "to": {{"city": "Oslo"}}}}'
    made, before = PAY.validate(text)["amount"], parsed_first(PAY, text)["amount"]
    assert str(made) == str(before)


def test_only_a_tool_without_a_decimal_takes_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    passes: list[str] = []
    for tool in (TOOL, PAY):
        one_pass = tool.arguments_model.model_validate_json

        def counted(text: str, *args: Any, _one: Any = one_pass, **kwargs: Any) -> Any:
            passes.append(text)
            return _one(text, *args, **kwargs)

        monkeypatch.setattr(tool.arguments_model, "model_validate_json", counted)
    TOOL.validate('{"order": 1}')
    PAY.validate('{"order": 1, "amount": 2.0}')
    assert passes == ['{"order": 1}']


@pytest.mark.parametrize(("text", "said"), INVALID)
def test_invalid_arguments_are_refused_saying_what_is_wrong(text: str, said: str) -> None:
    with pytest.raises(InvalidArguments) as refused:
        TOOL.validate(text)
    assert said in str(refused.value)


def test_text_only_python_parses_is_still_accepted() -> None:
    # json.loads takes NaN and lone surrogates; the one-pass parser may not, and then the
    # path that parses first decides, as it always did.
    assert TOOL.validate('{"order": 1, "ratio": NaN}')["ratio"] != 1.0
    assert TOOL.validate('{"order": 1, "note": "\\ud800"}')["note"] == "\ud800"


def test_arguments_are_a_new_dict_each_time() -> None:
    first = TOOL.validate('{"order": 1}')
    first["order"] = 99
    assert TOOL.validate('{"order": 1}')["order"] == 1
