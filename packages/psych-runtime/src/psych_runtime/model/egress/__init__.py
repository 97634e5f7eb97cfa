"""The egress seam: every outbound HTTP request (model client, http tools) goes through here.

`Egress` checks each request against an `EgressPolicy` before connecting, injects secrets by
name, applies timeouts (per read, and in all), caps response sizes, and redacts secret values
from its errors. `Redactor` does the same redaction for what the runtime records. `tools` and
`model` meet only here.
"""

from psych_runtime.model.egress._egress import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_TOTAL_TIMEOUT,
    Egress,
    EgressResponse,
)
from psych_runtime.model.egress._policy import (
    AddressKind,
    EgressPolicy,
    HostResolver,
    address_kind,
    embedded_ipv4,
    system_resolve,
)
from psych_runtime.model.egress._redact import Redactor, redaction_mark

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_TOTAL_TIMEOUT",
    "AddressKind",
    "Egress",
    "EgressPolicy",
    "EgressResponse",
    "HostResolver",
    "Redactor",
    "address_kind",
    "embedded_ipv4",
    "redaction_mark",
    "system_resolve",
]
