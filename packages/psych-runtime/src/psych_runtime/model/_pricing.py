"""Prices per million tokens, and what a call's usage cost by them.

`PriceTable.snapshot()` is the bundled, dated table (built by scripts/build_price_snapshot.py
from the genai-prices data); `PriceTable({...})` is the app's own override. Both answer
`cost(model, usage)` with an exact `Cost`, or None when they have no price for the model.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, localcontext
from importlib import resources
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from psych_core import Cost, CostSource, Usage

Amount = Annotated[Decimal, Field(ge=0, allow_inf_nan=False)]


class TieredPrice(BaseModel):
    """A price that depends on the size of the prompt.

    `base` applies until the prompt (all input tokens, cached or not) is longer than a tier's
    `start`; then that tier's price applies to every token of the kind, as providers bill it.

    Attributes:
        base: the price per million tokens below the first tier.
        tiers: ``(start, price)`` pairs, by ascending start.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base: Amount
    tiers: tuple[tuple[Annotated[int, Field(ge=0)], Amount], ...] = ()

    def at(self, prompt_tokens: int) -> Decimal:
        """The price per million tokens for a prompt of `prompt_tokens` tokens."""
        price = self.base
        for start, tier_price in sorted(self.tiers):
            if prompt_tokens > start:
                price = tier_price
        return price


Rate = Amount | TieredPrice
"""A price per million tokens: a plain amount, or one that depends on the prompt's size."""


class ModelPrice(BaseModel):
    """What one model costs, per million tokens of each kind of `Usage`.

    Amounts may be given as strings, ints or Decimals (``ModelPrice(input="0.15",
    output="0.60")``); they are kept exact. A kind left None is billed like its parent, as
    providers do: `cache_read` and `cache_write` like `input`, `cache_write_1h` like
    `cache_write`, and `reasoning` like `output` (reasoning tokens are part of output).

    Attributes:
        input: uncached input tokens.
        output: output tokens, reasoning included unless `reasoning` has its own price.
        cache_read: input tokens read from the provider's cache.
        cache_write: input tokens written to the cache (5 minutes, or the provider's default).
        cache_write_1h: input tokens written to the cache for an hour.
        reasoning: reasoning tokens, when priced apart from other output.
        currency: the currency of every amount.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: Rate
    output: Rate
    cache_read: Rate | None = None
    cache_write: Rate | None = None
    cache_write_1h: Rate | None = None
    reasoning: Rate | None = None
    currency: str = "USD"

    def amount(self, usage: Usage) -> Decimal:
        """The exact cost of `usage` at these prices; never rounded."""
        prompt = usage.input + usage.cache_read + usage.cache_write + usage.cache_write_1h
        input_rate = _rate(self.input, prompt)
        output_rate = _rate(self.output, prompt)
        cache_write_rate = _rate(self.cache_write, prompt, input_rate)
        lines: list[tuple[int, Decimal]] = [
            (usage.input, input_rate),
            (usage.cache_read, _rate(self.cache_read, prompt, input_rate)),
            (usage.cache_write, cache_write_rate),
            (usage.cache_write_1h, _rate(self.cache_write_1h, prompt, cache_write_rate)),
        ]
        if self.reasoning is None:
            lines.append((usage.output, output_rate))
        else:
            reasoning = min(usage.reasoning, usage.output)
            lines.append((usage.output - reasoning, output_rate))
            lines.append((reasoning, _rate(self.reasoning, prompt)))
        with localcontext() as context:
            # Enough digits that no realistic product or sum is rounded at all.
            context.prec = 80
            total = sum((Decimal(tokens) * rate for tokens, rate in lines), Decimal(0))
            return _tidy(total.scaleb(-6))


def _tidy(amount: Decimal) -> Decimal:
    # The same value without trailing zeros (0.0024, not 0.00240000), and whole amounts
    # without an exponent (1000, not 1E+3).
    tidy = amount.normalize()
    return tidy.quantize(Decimal(1)) if tidy == tidy.to_integral_value() else tidy


def _rate(rate: Rate | None, prompt: int, parent: Decimal | None = None) -> Decimal:
    if rate is None:
        assert parent is not None
        return parent
    if isinstance(rate, TieredPrice):
        return rate.at(prompt)
    return rate


Matcher = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class _Model:
    id: str
    matches: Matcher
    price: ModelPrice | None  # None: known, but billed in a way Psych cannot price


@dataclass(frozen=True, slots=True)
class _Provider:
    id: str
    api_pattern: re.Pattern[str] | None
    model_match: Matcher | None
    fallbacks: tuple[str, ...]
    models: tuple[_Model, ...]

    def find(self, model: str) -> _Model | None:
        for entry in self.models:
            if entry.matches(model):
                return entry
        return None


class PriceTable:
    """Prices per million tokens, by model: the bundled snapshot, or the app's own.

    ``PriceTable({"my-model": ModelPrice(input="0.15", output="0.60")})`` is an override
    table: a key matches the model name exactly (ignoring case), and a key ending in ``*``
    matches every name that starts with the rest (``"gpt-4o-mini*"``). Its costs have source
    ``override``. `PriceTable.snapshot()` is the bundled table; its costs have source
    ``snapshot`` and the date the prices were taken (`as_of`).

    Args:
        prices: model name (or ``prefix*``) to its prices; a mapping of amounts is accepted
            for a `ModelPrice`.
        as_of: the date the prices are valid for, if the app wants it on each `Cost`.
    """

    def __init__(
        self,
        prices: Mapping[str, ModelPrice | Mapping[str, Any]],
        *,
        as_of: dt.date | None = None,
    ) -> None:
        models = tuple(
            _Model(
                id=name,
                matches=_name_matcher(name),
                price=price if isinstance(price, ModelPrice) else ModelPrice.model_validate(price),
            )
            for name, price in prices.items()
        )
        self._providers: tuple[_Provider, ...] = (_Provider("", None, None, (), models),)
        self._source: CostSource = "override"
        self._as_of = as_of

    @classmethod
    def snapshot(cls) -> PriceTable:
        """The bundled snapshot of list prices (standard tier, in USD), dated `as_of`."""
        return _snapshot()

    @classmethod
    def from_json(cls, text: str) -> PriceTable:
        """A snapshot table from JSON written by scripts/build_price_snapshot.py.

        Lets an app use fresher prices than the bundled ones without upgrading Psych.
        """
        return cls._from_snapshot(json.loads(text))

    @property
    def source(self) -> CostSource:
        """``snapshot`` for the bundled table, ``override`` for the app's."""
        return self._source

    @property
    def as_of(self) -> dt.date | None:
        """The date the prices are valid for, when known."""
        return self._as_of

    def price(
        self, model: str, *, provider: str | None = None, base_url: str | None = None
    ) -> ModelPrice | None:
        """The prices of `model`, or None when this table has none.

        Args:
            model: the model's name as the provider reports it (``"gpt-4o-2024-08-06"``).
            provider: the provider's id in the snapshot (``"openai"``, ``"openrouter"``, ...).
            base_url: the API's URL; the snapshot recognises the provider from it. A URL of
                no known provider (a gateway, a server of your own) has no snapshot prices:
                give the client an override instead. Override tables ignore both.
        """
        ref = model.strip().lower()
        if self._source == "override":
            entry = self._providers[0].find(ref)
            return entry.price if entry is not None else None
        chosen = self._provider(ref, provider, base_url)
        if chosen is None:
            return None
        entry = self._find(chosen, ref)
        if entry is None:
            compact = _dashed_date(ref)
            entry = self._find(chosen, compact) if compact != ref else None
        return entry.price if entry is not None else None

    def cost(
        self,
        model: str,
        usage: Usage,
        *,
        provider: str | None = None,
        base_url: str | None = None,
    ) -> Cost | None:
        """What `usage` of `model` cost by this table, or None when it has no price for it."""
        price = self.price(model, provider=provider, base_url=base_url)
        if price is None:
            return None
        return Cost(
            amount=price.amount(usage),
            currency=price.currency,
            source=self._source,
            as_of=self._as_of,
        )

    def _provider(self, ref: str, provider: str | None, base_url: str | None) -> _Provider | None:
        if provider is not None:
            wanted = provider.strip().lower()
            return next((p for p in self._providers if p.id == wanted), None)
        if base_url is not None:
            return next(
                (p for p in self._providers if p.api_pattern and p.api_pattern.match(base_url)),
                None,
            )
        return next((p for p in self._providers if p.model_match and p.model_match(ref)), None)

    def _find(self, provider: _Provider, ref: str) -> _Model | None:
        found = provider.find(ref)
        if found is not None:
            return found
        # A provider that resells others' models (Azure serves OpenAI's) falls back, one step.
        for fallback_id in provider.fallbacks:
            fallback = next((p for p in self._providers if p.id == fallback_id), None)
            if fallback is not None and (found := fallback.find(ref)) is not None:
                return found
        return None

    @classmethod
    def _from_snapshot(cls, data: Mapping[str, Any]) -> PriceTable:
        if data.get("format") != 1:
            raise ValueError(f"price snapshot format {data.get('format')!r} is not 1")
        table = cls({})
        table._source = "snapshot"
        table._as_of = dt.date.fromisoformat(data["as_of"])
        currency = data.get("currency", "USD")
        table._providers = tuple(
            _Provider(
                id=raw["id"],
                api_pattern=re.compile(raw["api_pattern"]) if raw.get("api_pattern") else None,
                model_match=_clause(raw["model_match"]) if raw.get("model_match") else None,
                fallbacks=tuple(raw.get("fallbacks", ())),
                models=tuple(
                    _Model(
                        id=model["id"],
                        matches=_clause(model["match"]),
                        price=(
                            ModelPrice.model_validate({**model["prices"], "currency": currency})
                            if model.get("prices") is not None
                            else None
                        ),
                    )
                    for model in raw["models"]
                ),
            )
            for raw in data["providers"]
        )
        return table

    def __repr__(self) -> str:
        count = sum(len(p.models) for p in self._providers)
        when = f", as_of={self._as_of.isoformat()}" if self._as_of else ""
        return f"<PriceTable {self._source}: {count} models{when}>"


@functools.cache
def _snapshot() -> PriceTable:
    text = resources.files(__package__).joinpath("prices", "snapshot.json").read_text("utf-8")
    return PriceTable.from_json(text)


def _name_matcher(name: str) -> Matcher:
    key = name.strip().lower()
    if key.endswith("*"):
        prefix = key[:-1]
        return lambda ref: ref.startswith(prefix)
    return lambda ref: ref == key


def _clause(raw: Mapping[str, Any]) -> Matcher:
    """A genai-prices match clause: model names are compared in lower case."""
    (kind, value), *_ = raw.items()
    match kind:
        case "equals":
            equals = str(value).lower()
            return lambda ref: ref == equals
        case "starts_with":
            start = str(value).lower()
            return lambda ref: ref.startswith(start)
        case "ends_with":
            end = str(value).lower()
            return lambda ref: ref.endswith(end)
        case "contains":
            part = str(value).lower()
            return lambda ref: part in ref
        case "regex":
            pattern = re.compile(str(value))
            return lambda ref: pattern.search(ref) is not None
        case "or":
            anyof = tuple(_clause(item) for item in value)
            return lambda ref: any(clause(ref) for clause in anyof)
        case "and":
            allof = tuple(_clause(item) for item in value)
            return lambda ref: all(clause(ref) for clause in allof)
    raise ValueError(f"unknown match clause {kind!r} in the price snapshot")


_COMPACT_DATE = re.compile(r"(-)(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?=-|:|$)")


def _dashed_date(ref: str) -> str:
    # Gateways write dated names compactly (gpt-5.2-20251211); the data spells 2025-12-11.
    def dashed(match: re.Match[str]) -> str:
        year, month, day = (int(match.group(i)) for i in range(2, 5))
        try:
            dt.date(year, month, day)
        except ValueError:
            return match.group(0)
        return f"-{year:04d}-{month:02d}-{day:02d}"

    return _COMPACT_DATE.sub(dashed, ref)
