"""What ``twin verify`` needs, checked before it starts anything: a missing tool is not a broken network.

Every program the run will call, the user and privileges it needs, each with the Debian package that
provides it. The first thing missing is one line naming that package, and ``twin verify`` exits 2 (a
problem of this machine) instead of starting labs that then fail in confusing ways: without ``ping``,
a correct fabric would report every ping failed and exit 1 (a problem of the design).

Programs are looked up on ``PATH``; FRR's daemons in FRR's daemon directory (``/usr/lib/frr`` on Debian,
or ``$TWIN_FRR_LIB``), the ibsim preload library at its Debian path (or ``$TWIN_UMAD2SIM``).

>>> [n.program for n in roce_needs(bfd=False)]
['ip', 'ping', 'vtysh', 'zebra', 'bgpd']
>>> describe(Need("vtysh", "frr"))
'vtysh not found (Debian package frr: apt-get install frr)'
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from twin.verify.netns import NEIGH_SYSCTLS


def frr_lib() -> Path:
    """Where FRR's daemons are (Debian: /usr/lib/frr)."""
    return Path(os.environ.get("TWIN_FRR_LIB", "/usr/lib/frr"))


def umad2sim() -> str:
    """ibsim's libumad preload library (Debian: ibsim-utils, multiarch path)."""
    return os.environ.get("TWIN_UMAD2SIM", "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so")


@dataclass(frozen=True)
class Need:
    program: str
    package: str
    where: str = "path"  # "path": on PATH; "frr": in FRR's daemon directory; "file": an absolute path

    def found(self, path: str | None = None) -> bool:
        if self.where == "frr":
            f = frr_lib() / self.program
            return f.is_file() and os.access(f, os.X_OK)
        if self.where == "file":
            return Path(self.program).is_file()
        return shutil.which(self.program, path=path) is not None


def describe(need: Need) -> str:
    return f"{need.program} not found (Debian package {need.package}: apt-get install {need.package})"


def roce_needs(bfd: bool) -> list[Need]:
    """RoCE: namespaces and veths (iproute2), host pings (iputils-ping), FRR's vtysh and daemons."""
    return [Need("ip", "iproute2"), Need("ping", "iputils-ping"), Need("vtysh", "frr"), Need("zebra", "frr", "frr"),
            Need("bgpd", "frr", "frr")] + ([Need("bfdd", "frr", "frr")] if bfd else [])


def ib_needs() -> list[Need]:
    """InfiniBand: the simulator and its preload library, OpenSM, the diagnostics, coreutils' timeout."""
    return [Need("ibsim", "ibsim-utils"), Need(umad2sim(), "ibsim-utils", "file"), Need("opensm", "opensm"),
            Need("ibnetdiscover", "infiniband-diags"), Need("dump_fts", "infiniband-diags"), Need("ibstat", "infiniband-diags"),
            Need("smpquery", "infiniband-diags"), Need("timeout", "coreutils")]


def missing_program(needs: list[Need], path: str | None = None) -> str | None:
    for need in needs:
        if not need.found(path):
            return describe(need)
    return None


def roce_permissions() -> str | None:
    """Root, FRR's user, the neighbour-table sysctls, and a network namespace made and removed."""
    if os.geteuid() != 0:
        return "twin verify runs FRR in network namespaces and needs root (run it with sudo)"
    try:
        pwd.getpwnam("frr")
    except KeyError:
        return "the user 'frr' does not exist (Debian package frr creates it: apt-get install frr)"
    for p in NEIGH_SYSCTLS:
        if Path(p).exists() and not os.access(p, os.W_OK):
            return f"{p} is not writable (a read-only /proc/sys: run on a host or a privileged container)"
    probe = f"twpre{os.getpid() % 100000}{secrets.token_hex(2)}"
    p = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        return (f"cannot create a network namespace (ip netns add: {p.stderr.strip() or p.returncode}); "
                "twin verify needs root with CAP_SYS_ADMIN, e.g. not an unprivileged container")
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=30)
    return None


def check_roce(bfd: bool) -> str | None:
    """None when a RoCE verify can run here, else the one-line reason."""
    return missing_program(roce_needs(bfd)) or roce_permissions()


def check_ib() -> str | None:
    """None when an InfiniBand verify can run here (no root needed), else the one-line reason."""
    return missing_program(ib_needs())


def parse_slice(text: str | None) -> tuple[int | None, list[int] | None]:
    """``--slice``: (zone, buildings), 1-based; raises ValueError with what was expected.

    >>> parse_slice("zone:2"), parse_slice("building:1,3"), parse_slice(None)
    ((2, None), (None, [1, 3]), (None, None))
    """
    if not text:
        return None, None
    kind, _, num = text.partition(":")
    nums = num.split(",")
    if kind not in ("zone", "building") or not all(x.isdigit() and int(x) >= 1 for x in nums) or (kind == "zone" and len(nums) != 1):
        raise ValueError("expected zone:N or building:I,J with numbers >= 1")
    return (int(num), None) if kind == "zone" else (None, [int(x) for x in nums])
