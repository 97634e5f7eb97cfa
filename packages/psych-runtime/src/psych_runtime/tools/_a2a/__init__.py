"""A2A peers as tool sources: configuration here; the SDK is imported only when a run needs a
peer (`psych_runtime.tools._a2a._source`)."""

from psych_runtime.tools._a2a._config import SAFE_SKILL_TAGS, A2AConnection, A2AHttp

__all__ = ["SAFE_SKILL_TAGS", "A2AConnection", "A2AHttp"]
