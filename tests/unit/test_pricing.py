"""`ModelPrice` and `PriceTable`: exact costs, honest lookups, and a dated snapshot."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from decimal import Decimal, localcontext
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from psych_runtime import Cost, ModelPrice, PriceTable, TieredPrice, Usage

tokens = st.integers(min_value=0, max_value=10**9)
amounts = st.decimals(
    min_value=Decimal("0.000001"), max_value=Decimal(1000), places=6, allow_nan=False
)


def plain(rate: object, parent: Decimal | None = None) -> Decimal:
    if rate is None and parent is not None:
        return parent
    assert isinstance(rate, Decimal)
    return rate


def hand_sum(price: ModelPrice, usage: Usage) -> Decimal:
    """The cost, worked out kind by kind, the long way."""
    input_rate = plain(price.input)
    cache_write = plain(price.cache_write, input_rate)
    parts = [
        usage.input * input_rate,
        usage.cache_read * plain(price.cache_read, input_rate),
        usage.cache_write * cache_write,
        usage.cache_write_1h * plain(price.cache_write_1h, cache_write),
    ]
    if price.reasoning is None:
        parts.append(usage.output * plain(price.output))
    else:
        reasoning = min(usage.reasoning, usage.output)
        parts.append((usage.output - reasoning) * plain(price.output))
        parts.append(reasoning * plain(price.reasoning))
    with localcontext() as context:
        context.prec = 100
        return sum(parts, Decimal(0)) / Decimal(1_000_000)


usages = st.builds(
    Usage,
    input=tokens,
    output=tokens,
    cache_read=tokens,
    cache_write=tokens,
    cache_write_1h=tokens,
    reasoning=tokens,
)
prices = st.builds(
    ModelPrice,
    input=amounts,
    output=amounts,
    cache_read=st.none() | amounts,
    cache_write=st.none() | amounts,
    cache_write_1h=st.none() | amounts,
    reasoning=st.none() | amounts,
)


@given(price=prices, usage=usages)
def test_the_cost_is_the_exact_sum_over_kinds_and_never_rounds_to_zero(
    price: ModelPrice, usage: Usage
) -> None:
    amount = price.amount(usage)
    assert isinstance(amount, Decimal)
    assert amount == hand_sum(price, usage)
    if usage.input + usage.output + usage.cache_read + usage.cache_write + usage.cache_write_1h:
        assert amount > 0  # every price here is positive: one token costs something


@given(usage=usages)
def test_a_table_cost_is_the_prices_amount_with_its_source(usage: Usage) -> None:
    price = ModelPrice(input="0.15", output="0.6", cache_read="0.075")
    table = PriceTable({"my-model": price}, as_of=dt.date(2026, 1, 2))
    assert table.cost("my-model", usage) == Cost(
        amount=price.amount(usage), currency="USD", source="override", as_of=dt.date(2026, 1, 2)
    )


def test_one_token_at_the_cheapest_price_is_not_zero() -> None:
    price = ModelPrice(input="0.000001", output="0.000001")
    assert price.amount(Usage(input=1)) == Decimal("1E-12")


def test_kinds_without_their_own_price_are_billed_like_their_parent() -> None:
    price = ModelPrice(input="1", output="10")
    usage = Usage(input=1, cache_read=2, cache_write=3, cache_write_1h=4, output=5, reasoning=5)
    assert price.amount(usage) == Decimal("0.00006")  # (1 + 2 + 3 + 4) * 1 + 5 * 10
    with_writes = ModelPrice(input="1", output="10", cache_write="2")
    assert with_writes.amount(Usage(cache_write_1h=1_000_000)) == Decimal(2)


def test_reasoning_priced_apart_is_taken_out_of_output() -> None:
    price = ModelPrice(input="1", output="10", reasoning="20")
    assert price.amount(Usage(output=1_000_000, reasoning=250_000)) == Decimal("12.5")


def test_a_tiered_price_applies_to_every_token_once_the_prompt_passes_the_tier() -> None:
    price = ModelPrice(
        input=TieredPrice(base="1.25", tiers=((200_000, "2.5"),)),
        output=TieredPrice(base="10", tiers=((200_000, "15"),)),
    )
    small = Usage(input=150_000, cache_read=50_000, output=1_000)
    large = Usage(input=150_000, cache_read=50_001, output=1_000)
    assert price.amount(small) == (200_000 * Decimal("1.25") + 1_000 * 10) / 10**6
    assert price.amount(large) == (200_001 * Decimal("2.5") + 1_000 * 15) / 10**6


def test_prices_must_be_finite_and_not_negative() -> None:
    for bad in ("-1", "NaN", "Infinity"):
        with pytest.raises(ValidationError):
            ModelPrice(input=bad, output="1")


def test_an_override_matches_names_exactly_or_by_a_prefix_star() -> None:
    table = PriceTable(
        {
            "gpt-4o-mini*": {"input": "1", "output": "1"},
            "My-Model": ModelPrice(input="2", output="2"),
        }
    )
    assert table.price("gpt-4o-mini-2024-07-18") == ModelPrice(input="1", output="1")
    assert table.price("my-model") == ModelPrice(input="2", output="2")
    assert table.price("my-model-2") is None
    assert table.cost("unknown", Usage(input=10)) is None
    assert table.source == "override"


# -- the bundled snapshot ------------------------------------------------------------------------


def test_the_snapshot_is_dated_and_priced_from_the_snapshot() -> None:
    snapshot = PriceTable.snapshot()
    assert snapshot.source == "snapshot"
    assert snapshot.as_of is not None
    cost = snapshot.cost("gpt-4o", Usage(input=1000, output=100), provider="openai")
    assert cost is not None
    assert cost.source == "snapshot"
    assert cost.as_of == snapshot.as_of
    assert cost.currency == "USD"
    assert cost.amount > 0


def test_the_snapshot_finds_the_provider_from_the_url_and_dated_model_names() -> None:
    snapshot = PriceTable.snapshot()
    by_url = snapshot.price("gpt-4o-2024-08-06", base_url="https://api.openai.com/v1")
    by_id = snapshot.price("gpt-4o", provider="openai")
    by_name = snapshot.price("gpt-4o")
    assert by_url is not None
    assert by_url == by_id == by_name
    compact = snapshot.price("claude-sonnet-4-20250514", provider="anthropic")
    assert compact is not None


def test_an_unknown_url_or_model_has_no_snapshot_price() -> None:
    snapshot = PriceTable.snapshot()
    # A server of your own, or a gateway the snapshot does not know: no guessing.
    assert snapshot.price("gpt-4o", base_url="http://127.0.0.1:8000/v1") is None
    assert snapshot.price("no-such-model-anywhere", provider="openai") is None
    assert snapshot.price("gpt-4o", provider="no-such-provider") is None
    assert snapshot.cost("no-such-model-anywhere", Usage(input=5)) is None


def test_a_model_the_snapshot_cannot_price_is_not_priced_as_another() -> None:
    # text-embedding models are billed by input only; a name that matches one must stay
    # unpriced, not fall through to a later rule that happens to match it too.
    snapshot = PriceTable.snapshot()
    assert snapshot.price("text-embedding-3-small", provider="openai") is None


def test_a_snapshot_of_your_own_can_be_loaded() -> None:
    text = json.dumps(
        {
            "format": 1,
            "as_of": "2030-01-01",
            "currency": "EUR",
            "providers": [
                {
                    "id": "acme",
                    "api_pattern": r"https://api\.acme\.example",
                    "model_match": {"starts_with": "acme-"},
                    "models": [
                        {
                            "id": "acme-1",
                            "match": {"equals": "acme-1"},
                            "prices": {"input": "1", "output": "2"},
                        },
                        {"id": "acme-embed", "match": {"contains": "embed"}, "prices": None},
                    ],
                }
            ],
        }
    )
    table = PriceTable.from_json(text)
    cost = table.cost("ACME-1", Usage(output=1_000_000), base_url="https://api.acme.example/v1")
    assert cost == Cost(
        amount=Decimal(2), currency="EUR", source="snapshot", as_of=dt.date(2030, 1, 1)
    )
    assert table.price("acme-embed-1") is None
    with pytest.raises(ValueError, match="format"):
        PriceTable.from_json('{"format": 2}')


def test_the_bundled_snapshot_is_what_the_build_script_makes() -> None:
    # Fails after genai-prices is upgraded until the snapshot is rebuilt (and reviewed):
    # `uv run python scripts/build_price_snapshot.py`.
    reason = "the build script reads genai-prices (the dev group), not installed here"
    pytest.importorskip("genai_prices", reason=reason)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(root / "scripts" / "build_price_snapshot.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=root,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
