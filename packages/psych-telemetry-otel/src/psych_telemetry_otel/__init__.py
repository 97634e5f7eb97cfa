"""psych_telemetry_otel: OpenTelemetry traces and metrics of Psych runs, derived from their logs.

``Runtime(..., telemetry=OTelTelemetry())`` with a tracer provider built with
``TracerProvider(id_generator=RunSpanIds())``: one trace per run, across crashes, workers and
waits, in the OpenTelemetry GenAI semantic conventions. Depends on ``opentelemetry-api`` only;
the application chooses the SDK, the exporters and the backend.
"""

from psych_telemetry_otel._ids import RunSpanIds
from psych_telemetry_otel._telemetry import SCOPE, OTelTelemetry

__all__ = ["SCOPE", "OTelTelemetry", "RunSpanIds"]


def _claim_exports() -> None:
    # Exports report this package as their home: users see one public name for each.
    OTelTelemetry.__module__ = __name__
    RunSpanIds.__module__ = __name__


_claim_exports()
