"""Talking to models: building requests, recording answers, the OpenAI-compatible client,
usage and prices. The egress seam, `model.egress`, is the one way out to the network."""

from psych_runtime.model._openai import OpenAIChatClient
from psych_runtime.model._openai_usage import cost_from_openai, usage_from_openai
from psych_runtime.model._pricing import ModelPrice, PriceTable, Rate, TieredPrice
from psych_runtime.model._turn import (
    build_request,
    failed_record,
    failure_record,
    failure_records,
    finished_record,
)

__all__ = [
    "ModelPrice",
    "OpenAIChatClient",
    "PriceTable",
    "Rate",
    "TieredPrice",
    "build_request",
    "cost_from_openai",
    "failed_record",
    "failure_record",
    "failure_records",
    "finished_record",
    "usage_from_openai",
]
