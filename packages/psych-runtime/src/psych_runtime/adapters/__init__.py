"""Adapters in the box: they implement core ports and import nothing else of the runtime."""

from psych_runtime.adapters._allow_all import AllowAll
from psych_runtime.adapters._env_secrets import EnvSecretResolver
from psych_runtime.adapters._file_blobs import FileBlobStore
from psych_runtime.adapters._local_live import LocalLiveChannel
from psych_runtime.adapters._local_memory import LocalUserMemory
from psych_runtime.adapters._memory_blobs import MemoryBlobStore
from psych_runtime.adapters._memory_store import MemoryStore
from psych_runtime.adapters._offloading_store import DEFAULT_BLOB_THRESHOLD, OffloadingStore
from psych_runtime.adapters._subprocess_sandbox import SubprocessSandbox

__all__ = [
    "DEFAULT_BLOB_THRESHOLD",
    "AllowAll",
    "EnvSecretResolver",
    "FileBlobStore",
    "LocalUserMemory",
    "LocalLiveChannel",
    "MemoryBlobStore",
    "MemoryStore",
    "OffloadingStore",
    "SubprocessSandbox",
]
