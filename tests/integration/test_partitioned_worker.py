"""Workers on two hosts, one cut off from the database mid-run.

Each host is a network namespace this test creates, joined to this machine by a veth link;
its only way to the database (PostgreSQL on this machine's loopback) is a forwarder listening
on this machine's end of its link. Workers on both hosts serve the same runs. Mid-run, host A's
link is taken down: its packets go nowhere, as in a real partition, so its connections hang
rather than fail. Host B must finish every run once A's leases expire, and A must start no
effect once its lease has ended, although it never hears that it lost the run. Every effect is
written to a ledger with its wall-clock time before it starts: no line of A's may come later
than the cut plus one lease, and no effect (all are unsafe) may appear twice.

Needs root (namespaces and links) and iproute2's `ip`, as the sandbox tests need bubblewrap;
it fails, never skips, when they are missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import psych_runtime
from psych_runtime import Scope, dispatch
from psych_runtime.records import AttemptStarted
from psych_store_postgres import PostgresStore
from tests._postgres import connect, drop_schema, new_schema, test_dsn
from tests.integration.partition_worker import LEASE_TTL, SPEC, TURNS

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
RUNS = 16
SCOPE = Scope(tenant="partition")


@dataclass(frozen=True)
class Host:
    """A network namespace joined to this machine by one veth link."""

    name: str
    namespace: str
    link: str
    address: str
    """This machine's address on the link: what the host reaches the database through."""


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")


@contextmanager
def _hosts(*names: str) -> Iterator[dict[str, Host]]:
    if shutil.which("ip") is None or os.geteuid() != 0:
        pytest.fail(
            "the partition test creates network namespaces: it needs root and iproute2's `ip` "
            "(apt-get install iproute2)",
            pytrace=False,
        )
    tag = f"{os.getpid() % 10000}{random.randrange(100)}"
    subnet = random.randrange(1, 250)
    made: list[Host] = []
    try:
        for index, name in enumerate(names):
            host = Host(
                name=name,
                namespace=f"psych{tag}{name}",
                link=f"ps{tag}{name}",
                address=f"10.231.{subnet}.{4 * index + 1}",
            )
            inside = f"10.231.{subnet}.{4 * index + 2}"
            _ip("netns", "add", host.namespace)
            made.append(host)
            _ip("link", "add", host.link, "type", "veth", "peer", "name", f"{host.link}n")
            _ip("link", "set", f"{host.link}n", "netns", host.namespace)
            _ip("addr", "add", f"{host.address}/30", "dev", host.link)
            _ip("link", "set", host.link, "up")
            ns = ("netns", "exec", host.namespace, "ip")
            _ip(*ns, "addr", "add", f"{inside}/30", "dev", f"{host.link}n")
            _ip(*ns, "link", "set", f"{host.link}n", "up")
            _ip(*ns, "link", "set", "lo", "up")
        yield {host.name: host for host in made}
    finally:
        for host in made:
            subprocess.run(["ip", "link", "del", host.link], capture_output=True, check=False)
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True, check=False)


class Forwarder:
    """Forwards connections made to the hosts' link addresses to the database.

    `silence(address)` holds back every answer to the host on that link (its requests still
    reach the database and commit; it hears nothing), until `restore(address)` lets them
    through, in order.
    """

    def __init__(self, addresses: list[str], target: tuple[str, int]) -> None:
        self._addresses = addresses
        self._target = target
        self._pipes: set[asyncio.Task[None]] = set()
        self._servers: list[asyncio.Server] = []
        self._open = {address: asyncio.Event() for address in addresses}
        self._armed: dict[str, bytes] = {}
        for event in self._open.values():
            event.set()
        self.port = 0

    def silence(self, address: str) -> None:
        self._open[address].clear()

    def silence_after(self, address: str, marker: bytes) -> None:
        """Silence `address` right after the next request from it that carries `marker`
        has been passed on to the database."""
        self._armed[address] = marker

    async def silenced(self) -> bool:
        return any(not gate.is_set() for gate in self._open.values())

    def restore(self, address: str) -> None:
        self._open[address].set()

    async def __aenter__(self) -> Forwarder:
        # One port on every address: the first listener picks it, the others take the same.
        for address in self._addresses:
            server = await asyncio.start_server(self._serve, host=address, port=self.port)
            self.port = server.sockets[0].getsockname()[1]
            self._servers.append(server)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._pipes):
            task.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        address = writer.get_extra_info("sockname")[0]
        gate = self._open[address]
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return
        for task in (
            asyncio.create_task(self._requests(reader, up_writer, address)),
            asyncio.create_task(self._pipe(up_reader, writer, gate)),
        ):
            self._pipes.add(task)
            task.add_done_callback(self._pipes.discard)

    async def _requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, address: str
    ) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
                marker = self._armed.get(address)
                if marker is not None and marker in data:
                    del self._armed[address]
                    self.silence(address)
        except OSError:
            pass
        finally:
            writer.close()

    @staticmethod
    async def _pipe(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, gate: asyncio.Event | None
    ) -> None:
        try:
            while data := await reader.read(65536):
                if gate is not None:
                    await gate.wait()
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()


def _start_worker(host: Host, url: str, ledger: Path) -> subprocess.Popen[bytes]:
    command = ["ip", "netns", "exec", host.namespace, sys.executable, "-m"]
    command += ["tests.integration.partition_worker", url, str(ledger), host.name]
    with open(ledger.with_name(f"worker-{host.name}.log"), "wb") as output:
        return subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


def _ledger(path: Path) -> list[tuple[str, float, str, int]]:
    if not path.exists():
        return []
    lines = [line.split() for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [(host, float(at), key, int(attempt)) for host, at, key, attempt in lines]


async def _until(what: str, check: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        assert callable(check)
        if await check():
            return
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting until {what}")
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("cut", ["unplugged", "silenced"])
async def test_a_worker_cut_off_from_the_database_starts_no_effect_once_its_lease_ends(
    cut: str, tmp_path: Path
) -> None:
    """`unplugged`: host A's link goes down, nothing passes either way. `silenced`: A's
    requests still reach the database and commit, but no answer reaches A (the harshest
    partition: a start A recorded is acknowledged only after its lease is long gone). Both
    heal once host B has finished every run, and A then hears whatever was held back."""
    (await connect()).terminate()  # fails the test, saying how to start the server
    dsn = urlsplit(test_dsn())
    schema = new_schema("partition")
    store = PostgresStore(test_dsn(), schema=schema)
    await store.migrate()
    ledger = tmp_path / "ledger.txt"
    workers: list[subprocess.Popen[bytes]] = []
    try:
        scoped = store.scoped(SCOPE)
        run_ids = [await dispatch(scoped, SPEC, f"run {n}") for n in range(RUNS)]
        with _hosts("a", "b") as hosts:
            addresses = [host.address for host in hosts.values()]
            target = (dsn.hostname or "127.0.0.1", dsn.port or 5432)
            async with Forwarder(addresses, target) as forwarder:

                def url(host: Host) -> str:
                    where = f"{dsn.username}:{dsn.password}@{host.address}:{forwarder.port}"
                    where += dsn.path
                    return f"postgresql://{where}?schema={schema}&max_size=6"

                workers.append(_start_worker(hosts["a"], url(hosts["a"]), ledger))

                async def a_is_busy() -> bool:
                    return sum(1 for line in _ledger(ledger) if line[0] == "a") >= 6

                await _until("host a has run some effects", a_is_busy, 60)
                workers.append(_start_worker(hosts["b"], url(hosts["b"]), ledger))
                held = {
                    run_id
                    for run_id in run_ids
                    if (row := await store.get_run(SCOPE.tenant, run_id)) is not None
                    and row.lease_owner == "host-a"
                }
                if cut == "unplugged":
                    _ip("link", "set", hosts["a"].link, "down")
                else:
                    # Right after the request that records a call's start: the call is
                    # committed as started, and host A does not hear so until long after.
                    forwarder.silence_after(hosts["a"].address, b'"tool_call_started"')
                    await _until("host a recorded a start", forwarder.silenced, 30)
                cut_at = time.time()

                async def all_done() -> bool:
                    for run_id in run_ids:
                        if (await psych_runtime.status(scoped, run_id)).status != "completed":
                            return False
                    return True

                await _until("host b has finished every run", all_done, 180)
                if cut == "unplugged":
                    _ip("link", "set", hosts["a"].link, "up")
                else:
                    forwarder.restore(hosts["a"].address)
                # Host A hears what was held back (or reconnects) and goes on from there.
                await asyncio.sleep(3 * LEASE_TTL.total_seconds())
                assert workers[0].poll() is None, "host a's worker died"
        effects = _ledger(ledger)
        lease_end = cut_at + LEASE_TTL.total_seconds()
        late = [line for line in effects if line[0] == "a" and line[1] > lease_end]
        assert late == [], f"host a started effects after its lease ended at {lease_end}: {late}"
        keys = [key for _host, _at, key, _attempt in effects]
        assert len(keys) == len(set(keys)), "an unsafe effect happened twice"
        assert held, "host a held no run when it was cut off: the test proved nothing"
        taken_over = 0
        for run_id in run_ids:
            log = await psych_runtime.read_log(scoped, run_id)
            assert [r.seq for r in log] == list(range(len(log)))
            owners = [r.body.worker_id for r in log if isinstance(r.body, AttemptStarted)]
            if "host-a" in owners and owners[-1] == "host-b":
                taken_over += 1
            done = await psych_runtime.report(scoped, run_id)
            assert len(done.tool_calls) == TURNS
        assert taken_over >= len(held)
    finally:
        for worker in workers:
            with contextlib.suppress(ProcessLookupError):
                worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=30)
        await store.close()
        await drop_schema(schema)
