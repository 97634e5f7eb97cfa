"""The egress seam: every outbound HTTP request (model client, http tools) goes through here.

`Egress` checks each request against an `EgressPolicy` before connecting, injects secrets by
name, applies timeouts, and redacts secret values from its errors. `Redactor` does the same
redaction for what the runtime records. `tools` and `model` meet only here.
"""

from psych_runtime.model.egress._egress import Egress, EgressResponse
from psych_runtime.model.egress._policy import (
    AddressKind,
    EgressPolicy,
    HostResolver,
    address_kind,
    system_resolve,
)
from psych_runtime.model.egress._redact import Redactor, redaction_mark

__all__ = [
    "AddressKind",
    "Egress",
    "EgressPolicy",
    "EgressResponse",
    "HostResolver",
    "Redactor",
    "address_kind",
    "redaction_mark",
    "system_resolve",
]
