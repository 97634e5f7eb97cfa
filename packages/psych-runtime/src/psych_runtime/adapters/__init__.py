"""Adapters in the box: they implement core ports and import nothing else of the runtime."""

from psych_runtime.adapters._env_secrets import EnvSecretResolver
from psych_runtime.adapters._memory_store import MemoryStore
from psych_runtime.adapters._subprocess_sandbox import SubprocessSandbox

__all__ = ["EnvSecretResolver", "MemoryStore", "SubprocessSandbox"]
