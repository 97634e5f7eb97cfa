"""The execution engine: configuration, admission, the driver of an attempt, leases."""

import logging

from psych_runtime.runtime._admission import Parent, admit
from psych_runtime.runtime._attempt import Attempt, index_of
from psych_runtime.runtime._clock import Clock, SystemClock
from psych_runtime.runtime._config import Leases, Runtime, registry_of
from psych_runtime.runtime._decide import ApprovalCheck
from psych_runtime.runtime._dispatch import dispatch
from psych_runtime.runtime._drive import Driven, drive
from psych_runtime.runtime._execute_state import load_spec, load_state
from psych_runtime.runtime._faults import POINTS
from psych_runtime.runtime._ids import new_run_id, new_worker_id
from psych_runtime.runtime._lease import Lease, with_lease
from psych_runtime.runtime._legacy import runtime_of
from psych_runtime.runtime._scoped import authorize
from psych_runtime.runtime._telemetry_feed import TelemetryFeed
from psych_runtime.runtime._worker import Worker

__all__ = [
    "POINTS",
    "ApprovalCheck",
    "Attempt",
    "Clock",
    "Driven",
    "Lease",
    "Leases",
    "Parent",
    "Runtime",
    "SystemClock",
    "TelemetryFeed",
    "Worker",
    "admit",
    "authorize",
    "dispatch",
    "drive",
    "index_of",
    "load_spec",
    "load_state",
    "new_run_id",
    "new_worker_id",
    "registry_of",
    "runtime_of",
    "with_lease",
]

# Quiet unless the app configures logging (as libraries should be): the worker logs claims,
# completions, failures and lost leases under "psych_runtime.worker".
logging.getLogger("psych_runtime").addHandler(logging.NullHandler())
