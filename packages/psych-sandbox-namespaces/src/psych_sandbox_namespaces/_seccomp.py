"""A small seccomp filter, compiled to classic BPF in pure Python for ``bwrap --seccomp FD``.

What it blocks, with ``EPERM`` (the call fails; the program goes on):

- tracing and reading other processes' memory: ``ptrace``, ``process_vm_readv``,
  ``process_vm_writev``, ``kcmp``, ``pidfd_getfd``;
- mounting and changing the filesystem view: ``mount``, ``umount2``, ``pivot_root``,
  ``open_tree``, ``move_mount``, ``fsopen``, ``fsconfig``, ``fsmount``, ``fspick``,
  ``mount_setattr``, ``name_to_handle_at``, ``open_by_handle_at``;
- new namespaces: ``unshare``, ``setns``, and ``clone`` with ``CLONE_NEWUSER``; ``clone3`` fails
  with ``ENOSYS`` (its flags sit in memory a filter cannot read), so libc falls back to ``clone``;
- the kernel's big attack surfaces and host-wide switches: ``bpf``, ``perf_event_open``,
  ``userfaultfd``, ``keyctl``, ``add_key``, ``request_key``, ``kexec_load``,
  ``kexec_file_load``, ``init_module``, ``finit_module``, ``delete_module``, ``reboot``,
  ``swapon``, ``swapoff``, ``acct``, ``quotactl``, ``syslog``, ``lookup_dcookie``, and on x86-64
  ``iopl`` and ``ioperm``;
- on x86-64, every x32-ABI system call (numbers from ``0x40000000``), which would bypass the
  numbers above; and any call made under another architecture's ABI kills the process.

Most of these need capabilities the sandbox has already dropped; the filter is the second wall,
for kernel bugs reachable without them.
"""

from __future__ import annotations

import errno
import platform
import struct
from typing import Final

# struct seccomp_data: nr at 0, arch at 4, instruction pointer at 8, args from 16 (8 bytes each).
_NR: Final = 0
_ARCH: Final = 4
_ARG0_LOW: Final = 16  # the low 32 bits of args[0] on little-endian machines

_LD_W_ABS: Final = 0x20
_JEQ_K: Final = 0x15
_JGE_K: Final = 0x35
_JSET_K: Final = 0x45
_RET_K: Final = 0x06

_ALLOW: Final = 0x7FFF0000
_KILL_PROCESS: Final = 0x80000000
_ERRNO: Final = 0x00050000

CLONE_NEWUSER: Final = 0x10000000
X32_SYSCALL_BIT: Final = 0x40000000

DENIED: Final = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "mount",
    "umount2",
    "pivot_root",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "name_to_handle_at",
    "open_by_handle_at",
    "unshare",
    "setns",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "syslog",
    "lookup_dcookie",
    "iopl",
    "ioperm",
)
"""The system calls the filter fails with EPERM (where the architecture has them)."""

# (AUDIT_ARCH value, system call numbers), from the kernel's unistd tables.
_TABLES: Final[dict[str, tuple[int, dict[str, int]]]] = {
    "x86_64": (
        0xC000003E,
        {
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "kcmp": 312,
            "pidfd_getfd": 438,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "name_to_handle_at": 303,
            "open_by_handle_at": 304,
            "unshare": 272,
            "setns": 308,
            "bpf": 321,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "kexec_load": 246,
            "kexec_file_load": 320,
            "init_module": 175,
            "finit_module": 313,
            "delete_module": 176,
            "reboot": 169,
            "swapon": 167,
            "swapoff": 168,
            "acct": 163,
            "quotactl": 179,
            "syslog": 103,
            "lookup_dcookie": 212,
            "iopl": 172,
            "ioperm": 173,
            "clone": 56,
            "clone3": 435,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "kcmp": 272,
            "pidfd_getfd": 438,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "name_to_handle_at": 264,
            "open_by_handle_at": 265,
            "unshare": 97,
            "setns": 268,
            "bpf": 280,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "kexec_load": 104,
            "kexec_file_load": 294,
            "init_module": 105,
            "finit_module": 273,
            "delete_module": 106,
            "reboot": 142,
            "swapon": 224,
            "swapoff": 225,
            "acct": 89,
            "quotactl": 60,
            "syslog": 116,
            "lookup_dcookie": 18,
            "clone": 220,
            "clone3": 435,
        },
    ),
}
_ALIASES: Final = {"amd64": "x86_64", "arm64": "aarch64"}


def supported_machine(machine: str | None = None) -> str | None:
    """The filter's name for `machine` (this one by default), or None when it has no table."""
    name = (machine or platform.machine()).lower()
    name = _ALIASES.get(name, name)
    return name if name in _TABLES else None


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def compile_filter(machine: str | None = None) -> bytes:
    """The filter as a ``struct sock_filter`` array, ready for ``bwrap --seccomp``.

    Raises:
        ValueError: when there is no system-call table for the machine.
    """
    name = supported_machine(machine)
    if name is None:
        raise ValueError(
            f"no seccomp system-call table for machine {machine or platform.machine()}"
        )
    audit_arch, numbers = _TABLES[name]
    eperm = _ERRNO | errno.EPERM
    program = [
        _op(_LD_W_ABS, _ARCH),
        _op(_JEQ_K, audit_arch, jt=1, jf=0),
        _op(_RET_K, _KILL_PROCESS),
        _op(_LD_W_ABS, _NR),
    ]
    if name == "x86_64":
        program += [_op(_JGE_K, X32_SYSCALL_BIT, jt=0, jf=1), _op(_RET_K, eperm)]
    for syscall in DENIED:
        if syscall in numbers:
            program += [_op(_JEQ_K, numbers[syscall], jt=0, jf=1), _op(_RET_K, eperm)]
    program += [
        _op(_JEQ_K, numbers["clone3"], jt=0, jf=1),
        _op(_RET_K, _ERRNO | errno.ENOSYS),
        _op(_JEQ_K, numbers["clone"], jt=0, jf=4),
        _op(_LD_W_ABS, _ARG0_LOW),
        _op(_JSET_K, CLONE_NEWUSER, jt=0, jf=1),
        _op(_RET_K, eperm),
        _op(_RET_K, _ALLOW),
        _op(_RET_K, _ALLOW),
    ]
    return b"".join(program)
