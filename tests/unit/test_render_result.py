"""What the model is told of a tool's result (`render_result`): compact JSON, the same that the
record keeps of it, so a run read back from its log tells the model what it was told live."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from pydantic import JsonValue

from psych_core import ToolCallFinished, made_record, render_result
from psych_core.ports import record_json

CALL_RESULTS: list[JsonValue] = [
    {"id": 7, "name": "naïve ☃ 𝄞", "price": 9.5, "tags": ["a", "b"], "ok": True, "gone": None},
    [1, -2, 0.1, 1e16, 1.5e-7, 10**30, "</script>"],
    {"nested": {"deeper": [{"x": '\\ " \x00 \n'}]}},
    [],
    {},
    0,
    False,
    None,
]


@pytest.mark.parametrize("result", CALL_RESULTS, ids=lambda result: type(result).__name__)
def test_a_result_is_compact_json_as_the_record_keeps_it(result: JsonValue) -> None:
    rendered = render_result(result)
    assert json.loads(rendered) == result
    body = ToolCallFinished(call_id="2.0", result=result)
    at = dt.datetime(2026, 12, 6, tzinfo=dt.UTC)
    written = record_json(made_record("01RUN", 3, 1, at, body)).decode()
    assert written.endswith(f',"result":{rendered}}}}}')


def test_a_string_is_told_as_it_is() -> None:
    assert render_result('not "JSON" at all') == 'not "JSON" at all'


def test_nan_and_infinity_are_told_as_the_record_keeps_them() -> None:
    result: JsonValue = {"ratio": float("nan"), "bound": float("inf")}
    assert render_result(result) == '{"ratio":null,"bound":null}'
    body = ToolCallFinished(call_id="2.0", result=result)
    at = dt.datetime(2026, 12, 6, tzinfo=dt.UTC)
    read_back = json.loads(record_json(made_record("01RUN", 3, 1, at, body)))["body"]["result"]
    assert render_result(read_back) == render_result(result)


def test_a_lone_surrogate_is_rendered_rather_than_raised() -> None:
    # The store refuses such a record later (the call fails `invalid_result`); folding it must
    # not raise first.
    assert render_result(["a\ud800b"]) == '["a\ud800b"]'
