"""The IO pieces Psych Runtime's adapters share (stdlib and psych_core only).

For sandbox backends (`SubprocessSandbox`, `NamespaceSandbox`, `DockerSandbox`), each piece
saying who releases what:

- `scratch_folder`: a private folder holding a request's files; removed when the block ends.
- `Supervisor`: a supervisor script started in a process group of its own, with a status pipe
  and a go pipe; leaving the block closes the pipes and kills and reaps what still runs.
  `PREPARE_SCRIPT` is the script that prepares a program's process (cgroups, rlimits, user)
  and execs the program; `python_command` is how such a script is run.
- `ProgramStreams` and `read_capped`: a program's stdin fed and its output read into an
  `ExecTally`, each output kept up to a cap; leaving the block cancels what still reads.
- `SETUP_FAULTS` (a `SetupFaultHook`): where a backend asks whether a test wants one
  guarantee's setup to really fail; only `psych_runtime.testing.sandbox_faults` arms it.

For store backends:

- `poll_until` with a `Backoff` (`SQLiteStore`, `MySQLStore`, `DynamoDBStore`; `PostgresStore`
  while it cannot listen): `Store.wait` by asking again, pauses doubling up to a
  ceiling; nothing is held between asks. `let_finish`: a short ask that runs to its end
  when its caller is cancelled (an ask of `poll_until`, `PostgresStore.wait`'s), since
  cutting it off costs the connection more than the ask.
- `SpecTexts`: the spec versions a store has written or read, so that `get_spec` reads a
  version once and `put_spec` writes it once per store instance (a version's JSON never
  changes); `PostgresStore`, `SQLiteStore`, `MySQLStore` and `DynamoDBStore` use it.

For adapters on a database driver (`PostgresStore`, `MySQLStore`): `read_in_pieces`, a
driver connection's asyncio transport reading at most `READ_PIECE` bytes at a time, so that a
short reply costs no ``mmap``/``munmap`` of a 256 KiB buffer.

For adapters on an SDK client (`DynamoDBStore`, `S3BlobStore`): `OpenedOnce`, the client
opened on first use in the running event loop, by one opener, closed by `close`.

The pure pieces (the grade accumulator `ExecTally`, `withhold_unmet`; the stores' batch and
claim checks, `check_batch`, `judge_append`, `check_claim`) are in `psych_core`.
"""

from psych_adapter_kit._capped_reader import ProgramStreams, read_capped
from psych_adapter_kit._launcher import PREPARE_SCRIPT, Supervisor, python_command
from psych_adapter_kit._opened_once import OpenedOnce
from psych_adapter_kit._polling import Backoff, let_finish, poll_until
from psych_adapter_kit._reads import READ_PIECE, read_in_pieces
from psych_adapter_kit._scratch import scratch_folder
from psych_adapter_kit._setup_faults import SETUP_FAULTS, SetupFaultHook
from psych_adapter_kit._spec_texts import SpecTexts

__all__ = [
    "Backoff",
    "OpenedOnce",
    "PREPARE_SCRIPT",
    "ProgramStreams",
    "READ_PIECE",
    "SETUP_FAULTS",
    "SetupFaultHook",
    "SpecTexts",
    "Supervisor",
    "let_finish",
    "poll_until",
    "python_command",
    "read_capped",
    "read_in_pieces",
    "scratch_folder",
]

Backoff.__module__ = __name__
OpenedOnce.__module__ = __name__
ProgramStreams.__module__ = __name__
SetupFaultHook.__module__ = __name__
SpecTexts.__module__ = __name__
Supervisor.__module__ = __name__
