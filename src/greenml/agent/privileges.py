"""Drop every capability the agent does not need, once its socket and files are open.

The agent keeps ``CAP_SYS_ADMIN`` (NVML sets power limits and clocks with it)
and ``CAP_DAC_READ_SEARCH`` (root-only counters such as RAPL's ``energy_uj``
where they are not root-owned); everything else leaves the effective,
permitted, inheritable and bounding sets, and ``no_new_privs`` is set, so
nothing the agent could be made to run would gain privileges. The kernel
interfaces are ``prctl(2)`` and ``capset(2)``, called through ctypes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from pathlib import Path

CAP_DAC_READ_SEARCH = 2
CAP_SYS_ADMIN = 21
KEEP = (CAP_DAC_READ_SEARCH, CAP_SYS_ADMIN)
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_CAP_VERSION_3 = 0x20080522


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]  # fmt: skip


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _last_cap() -> int:
    try:
        return int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        return 40


def drop_capabilities(keep: tuple[int, ...] = KEEP) -> str:
    """Keep only ``keep``; what was done, as ``CapEff`` says it (or why nothing was)."""
    if os.geteuid() != 0:
        return "not root: no capabilities to drop"
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}"
    bounding = ""
    for cap in range(_last_cap() + 1):
        failed = cap not in keep and libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0
        if failed and ctypes.get_errno() != errno.EINVAL:  # no CAP_SETPCAP: the rest still goes
            bounding = f"; bounding set kept ({os.strerror(ctypes.get_errno())})"
            break
    mask = [0, 0]
    for cap in keep:
        mask[cap // 32] |= 1 << (cap % 32)
    header = _Header(_CAP_VERSION_3, 0)
    data = (_Data * 2)(*(_Data(m, m, 0) for m in mask))
    if libc.capset(ctypes.byref(header), data) != 0:
        return f"capset failed: {os.strerror(ctypes.get_errno())}"
    return f"CapEff {effective_capabilities()}{bounding}"


def effective_capabilities(pid: int | str = "self") -> str:
    """The ``CapEff`` hex mask of a process."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return line.split()[1]
    return ""


def mask_of(caps: tuple[int, ...] = KEEP) -> int:
    """The capability mask of ``caps``."""
    return sum(1 << c for c in caps)
