"""Talking to models: building requests, recording answers."""

from psych_runtime.model._turn import build_request, failed_record, finished_record

__all__ = ["build_request", "failed_record", "finished_record"]
