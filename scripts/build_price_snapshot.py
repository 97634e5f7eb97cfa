"""Build the price snapshot bundled with psych-runtime from the `genai-prices` data.

    uv run python scripts/build_price_snapshot.py [--as-of YYYY-MM-DD] [--output PATH]

The snapshot (packages/psych-runtime/src/psych_runtime/model/prices/snapshot.json) holds, for
every provider and model genai-prices knows, the standard price per million tokens of each
kind Psych measures (input, output, cache_read, cache_write, cache_write_1h, reasoning) in
force on the `as_of` date, and the rules genai-prices uses to recognise a model and a provider
by name and API URL. The runtime reads only this file; it never imports genai-prices.
Before it writes, the script prices sample usages of every model both with psych_runtime's
`PriceTable` and with genai-prices' own calculation, and refuses to write on any difference.

Kept without prices (so a name that matches them is unpriced, not priced as another model),
with the reason printed: models priced by the time of day (their price depends on
when the call was made), models billed in units Psych does not measure (per request, per
character, per message), and models with no token prices. Prices by modality (audio, image,
video), web searches and batch or service-tier variants are not carried: Psych sends text at
the standard tier. genai-prices is MIT-licensed, by Pydantic Services Inc.; see NOTICE.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections import Counter
from decimal import Decimal
from importlib.metadata import version
from pathlib import Path
from typing import Any

from genai_prices import Usage as GenaiUsage
from genai_prices import types
from genai_prices.data import providers

from psych_runtime import PriceTable, Usage

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "packages/psych-runtime/src/psych_runtime/model/prices/snapshot.json"
FORMAT = 1

# genai-prices price key -> the Usage kind it prices.
KINDS = {
    "input_mtok": "input",
    "output_mtok": "output",
    "cache_read_mtok": "cache_read",
    "cache_write_mtok": "cache_write",
    "cache_write_1h_mtok": "cache_write_1h",
    "output_reasoning_mtok": "reasoning",
}
# Prices that only apply to usage Psych never causes (other modalities, server-side tools).
NOT_CAUSED = {
    "input_audio_mtok",
    "output_audio_mtok",
    "cache_audio_read_mtok",
    "input_image_mtok",
    "output_image_mtok",
    "cache_image_read_mtok",
    "input_video_mtok",
    "output_video_mtok",
    "audio_hours",
    "input_audio_hours",
    "output_audio_hours",
    "input_document_kpages",
    "input_annotated_document_kpages",
    "web_searches_kcount",
    "storage_searches_kcount",
    "social_searches_kcount",
    "code_executions_kcount",
    "rerank_searches_kcount",
    "input_gpixels",
}


class Skip(Exception):
    """A model the snapshot leaves out, and why."""


def clause(logic: Any) -> dict[str, Any]:
    """A genai-prices match clause as JSON."""
    match logic:
        case types.ClauseEquals(equals=value):
            return {"equals": value}
        case types.ClauseStartsWith(starts_with=value):
            return {"starts_with": value}
        case types.ClauseEndsWith(ends_with=value):
            return {"ends_with": value}
        case types.ClauseContains(contains=value):
            return {"contains": value}
        case types.ClauseRegex(regex=value):
            return {"regex": value}
        case types.ClauseOr(or_=clauses):
            return {"or": [clause(c) for c in clauses]}
        case types.ClauseAnd(and_=clauses):
            return {"and": [clause(c) for c in clauses]}
    raise TypeError(f"unknown match clause {logic!r}")


def rate(value: Decimal | types.TieredPrices) -> str | dict[str, Any]:
    if isinstance(value, types.TieredPrices):
        return {"base": str(value.base), "tiers": [[t.start, str(t.price)] for t in value.tiers]}
    return str(value)


def prices_on(model: types.ModelInfo, day: dt.date) -> types.ModelPrice:
    """The standard prices in force on `day`: the last conditional price that applies."""
    if isinstance(model.prices, types.ModelPrice):
        return model.prices
    if any(isinstance(c.constraint, types.TimeOfDateConstraint) for c in model.prices):
        raise Skip("priced by the time of day")
    chosen = model.prices[0].prices
    for conditional in model.prices:
        constraint = conditional.constraint
        if constraint is None or (
            isinstance(constraint, types.StartDateConstraint) and constraint.start_date <= day
        ):
            chosen = conditional.prices
    return chosen


def model_entry(model: types.ModelInfo, day: dt.date) -> dict[str, Any]:
    try:
        prices: dict[str, Any] | None = token_prices(model, day)
        reason = None
    except Skip as skip:
        # Kept without prices: a name that matches it must not fall through to another model.
        prices, reason = None, str(skip)
    entry = {"id": model.id, "match": clause(model.match), "prices": prices}
    if reason is not None:
        entry["unpriced"] = reason
    return entry


def token_prices(model: types.ModelInfo, day: dt.date) -> dict[str, Any]:
    price = prices_on(model, day)
    out: dict[str, Any] = {}
    for key, value in price.__dict__.items():
        if value is None or key.startswith("_"):
            continue
        if key in KINDS:
            out[KINDS[key]] = rate(value)
        elif key == "cache_write_5m_mtok":
            out.setdefault("cache_write", rate(value))
        elif key not in NOT_CAUSED:
            raise Skip(f"billed by {key}, which Psych does not measure")
    if "input" not in out or "output" not in out:
        raise Skip("no input and output token prices")
    return out


def build(day: dt.date) -> tuple[dict[str, Any], Counter[str]]:
    skipped: Counter[str] = Counter()
    entries = []
    for provider in providers:
        models = []
        for model in provider.models:
            entry = model_entry(model, day)
            models.append(entry)
            if "unpriced" in entry:
                skipped[entry["unpriced"]] += 1
        entries.append(
            {
                "id": provider.id,
                "api_pattern": provider.api_pattern,
                "model_match": clause(provider.model_match) if provider.model_match else None,
                "fallbacks": list(provider.fallback_model_providers or ()),
                "models": models,
            }
        )
    data = {
        "format": FORMAT,
        "as_of": day.isoformat(),
        "currency": "USD",
        "unit": "per million tokens",
        "source": f"genai-prices {version('genai-prices')} (MIT, Pydantic Services Inc.)",
        "providers": entries,
    }
    return data, skipped


def dump(data: dict[str, Any]) -> str:
    """Readable and diffable: one line per model."""
    lines = ["{"]
    for key, value in data.items():
        if key != "providers":
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)},")
    lines.append('  "providers": [')
    for p_index, provider in enumerate(data["providers"]):
        head = {k: v for k, v in provider.items() if k != "models"}
        lines.append("    {")
        for key, value in head.items():
            lines.append(f"      {json.dumps(key)}: {json.dumps(value)},")
        lines.append('      "models": [')
        models = provider["models"]
        for m_index, model in enumerate(models):
            comma = "," if m_index < len(models) - 1 else ""
            lines.append(f"        {json.dumps(model, separators=(',', ':'))}{comma}")
        lines.append("      ]")
        lines.append("    }" + ("," if p_index < len(data["providers"]) - 1 else ""))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


SAMPLES = (
    Usage(input=1_000, output=500),
    Usage(input=10, output=10, reasoning=10),
    Usage(
        input=300_000,
        output=2_000,
        cache_read=5_000,
        cache_write=3_000,
        cache_write_1h=1_000,
        reasoning=700,
    ),
)


def verify(text: str, day: dt.date) -> None:
    """Refuse a snapshot that prices any model otherwise than genai-prices does."""
    table = PriceTable.from_json(text)
    when = dt.datetime.combine(day, dt.time(12), tzinfo=dt.UTC)
    checked = 0
    for provider in providers:
        for model in provider.models:
            ours = table.price(model.id, provider=provider.id)
            theirs = provider.find_model(model.id, all_providers=providers)
            if theirs is None:  # some ids match none of the rules, there as here
                if ours is not None:
                    raise SystemExit(f"{provider.id}/{model.id}: found here, not by genai-prices")
                continue
            if ours is None:
                try:
                    token_prices(theirs, day)
                except Skip:
                    continue  # unpriced on both sides
                raise SystemExit(f"{provider.id}/{model.id}: priced by genai-prices, not here")
            for usage in SAMPLES:
                expected = theirs.calc_price(
                    GenaiUsage(
                        input_tokens=usage.input
                        + usage.cache_read
                        + usage.cache_write
                        + usage.cache_write_1h,
                        cache_read_tokens=usage.cache_read,
                        cache_write_tokens=usage.cache_write + usage.cache_write_1h,
                        cache_write_1h_tokens=usage.cache_write_1h,
                        output_tokens=usage.output,
                        output_reasoning_tokens=usage.reasoning,
                    ),
                    provider,
                    genai_request_timestamp=when,
                ).total_price
                got = ours.amount(usage)
                if got != expected:
                    raise SystemExit(
                        f"{provider.id}/{model.id}: {usage} costs {got} here, "
                        f"{expected} by genai-prices; the snapshot is not written"
                    )
                checked += 1
    print(f"verified {checked} prices against genai-prices")


def check(path: Path) -> int:
    """0 when the snapshot at `path` is exactly what this genai-prices data builds."""
    current = path.read_text()
    day = dt.date.fromisoformat(json.loads(current)["as_of"])
    data, _ = build(day)
    if dump(data) != current:
        print(
            f"{path} is not what genai-prices {version('genai-prices')} builds for {day}: "
            "run scripts/build_price_snapshot.py to rebuild it"
        )
        return 1
    print(f"{path} is up to date with genai-prices {version('genai-prices')} ({day})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--as-of", type=dt.date.fromisoformat, default=dt.date.today())
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; fail unless the snapshot at --output is what this build makes "
        "(for its own as_of date)",
    )
    args = parser.parse_args(argv)
    if args.check:
        return check(args.output)
    data, skipped = build(args.as_of)
    text = dump(data)
    verify(text, args.as_of)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    count = sum(len(p["models"]) for p in data["providers"]) - sum(skipped.values())
    providers_count = len(data["providers"])
    print(f"{args.output}: {count} priced models of {providers_count} providers, {args.as_of}")
    for reason, n in skipped.most_common():
        print(f"  unpriced {n}: {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
