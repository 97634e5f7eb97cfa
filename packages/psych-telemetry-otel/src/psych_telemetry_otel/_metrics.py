"""The measures a worker records, in the GenAI conventions where they define one.

Model calls: ``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration``. The rest
are Psych's own: tool call duration, runs by final status, attempts, lost leases, how long a
run waited for a worker, and the store's append round trip, by store.
"""

from __future__ import annotations

from opentelemetry.metrics import Meter

from psych_core import AttributeValue, PlannedSpan

_SECONDS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
_TOKENS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216)
_APPENDS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)

_MODEL_KEYS = (
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
)


class Measures:
    """The instruments, made once per `OTelTelemetry`."""

    def __init__(self, meter: Meter) -> None:
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Tokens used by each model call, by gen_ai.token.type",
            explicit_bucket_boundaries_advisory=list(_TOKENS),
        )
        self.operation_duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="How long each model call took",
            explicit_bucket_boundaries_advisory=list(_SECONDS),
        )
        self.tool_duration = meter.create_histogram(
            "psych.tool.duration",
            unit="s",
            description="How long each tool call took, from its start to its outcome",
            explicit_bucket_boundaries_advisory=list(_SECONDS),
        )
        self.runs_ended = meter.create_counter(
            "psych.runs.ended", unit="{run}", description="Runs that ended, by final status"
        )
        self.attempts = meter.create_counter(
            "psych.attempts", unit="{attempt}", description="Attempts begun (claims of a run)"
        )
        self.lease_losses = meter.create_counter(
            "psych.lease.losses",
            unit="{attempt}",
            description="Attempts stopped because their lease was lost or ran out",
        )
        self.claim_latency = meter.create_histogram(
            "psych.claim.latency",
            unit="s",
            description="How long a runnable run waited for a worker to claim it",
            explicit_bucket_boundaries_advisory=list(_SECONDS),
        )
        self.append_duration = meter.create_histogram(
            "psych.store.append.duration",
            unit="s",
            description="The round trip of one append to the store, by store",
            explicit_bucket_boundaries_advisory=list(_APPENDS),
        )

    def span(self, span: PlannedSpan) -> None:
        """Record what a planned span measures."""
        seconds = max((span.end - span.start).total_seconds(), 0.0)
        attributes = span.attributes
        match span.operation:
            case "chat":
                keys = {key: attributes[key] for key in _MODEL_KEYS if key in attributes}
                if span.error is not None:
                    keys["error.type"] = span.error
                self.operation_duration.record(seconds, keys)
                for kind, key in (
                    ("input", "gen_ai.usage.input_tokens"),
                    ("output", "gen_ai.usage.output_tokens"),
                ):
                    value = attributes.get(key)
                    if isinstance(value, int):  # unreported usage is not measured as zero
                        self.token_usage.record(value, {**keys, "gen_ai.token.type": kind})
            case "execute_tool":
                tool: dict[str, AttributeValue] = {
                    "gen_ai.tool.name": attributes["gen_ai.tool.name"],
                    "psych.tool.outcome": attributes["psych.tool.outcome"],
                }
                self.tool_duration.record(seconds, tool)
            case _:
                ended: dict[str, AttributeValue] = {
                    "psych.run.status": attributes["psych.run.status"],
                    "gen_ai.agent.name": attributes["gen_ai.agent.name"],
                }
                self.runs_ended.add(1, ended)
