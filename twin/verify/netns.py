"""Network namespaces and veth links for throwaway labs, and only those.

Several engineers (and CI) run labs on the same machine at the same time, so every namespace carries a
per-run prefix and clean-up deletes exactly the namespaces this object created. Neighbour-table
sysctls are global to the kernel: they are raised for the run (sessions stall with "neighbor table
overflow" beyond ~36 switches otherwise) and given back through the run's record
(:class:`twin.verify.runs.Run`), which restores them when the last run that needs them is gone, and
which a watchdog, the next run or ``twin verify --cleanup`` reaps if this process dies.

Example::

    with Namespaces() as lab:
        a, b = lab.add("leaf1"), lab.add("spine1")
        lab.link(a, "swp1", b, "swp1")
        lab.up()
"""

from __future__ import annotations

import atexit
import os
import secrets
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

from twin.verify.runs import Run
from twin.verify.topology import ifname

IP = "ip"
NEIGH_SYSCTLS = [
    f"/proc/sys/net/{fam}/neigh/default/gc_thresh{i}" for fam in ("ipv4", "ipv6") for i in (1, 2, 3)
]


class LabError(RuntimeError):
    """A lab could not be set up (missing privilege, binary, or a kernel refusal)."""


def run(cmd: list[str], *, timeout: float = 60, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
    """subprocess.run with a timeout always: a hung client must not hang a verify run."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input)
    if check and p.returncode != 0:
        raise LabError(f"{' '.join(cmd[:6])}{' ...' if len(cmd) > 6 else ''} failed ({p.returncode}): {p.stderr.strip() or p.stdout.strip()}")
    return p


def valid_ifname(name: str) -> bool:
    """Interface names twin uses: letters, digits, '_', '.', '-', at most 15 (Linux forbids '/', ':' and
    whitespace; ``ip -batch`` lines must not gain a word or a line)."""
    return ifname(name)


class Namespaces:
    """Owner of a set of namespaces named ``<prefix>-<n>``; cleans up on close, exit or error."""

    def __init__(self, prefix: str | None = None, neigh_threshold: int | None = None, run: Run | None = None) -> None:
        self.prefix = prefix or new_prefix()
        self.run = run or Run(self.prefix)  # recorded before anything is created
        self._own_run = run is None
        self.names: dict[str, str] = {}  # logical name -> namespace
        self._created: list[str] = []
        self._neigh = neigh_threshold
        self._closed = False
        self._batch_links: list[str] = []
        self._up: dict[str, list[str]] = {}
        atexit.register(self.close)

    # -------------------------------------------------------------- lifecycle
    def __enter__(self) -> "Namespaces":
        if self._neigh:
            self.raise_neighbour_tables(self._neigh)
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def add(self, logical: str) -> str:
        """Create the namespace for ``logical`` (short numbered names keep `ip netns list` readable)."""
        if logical in self.names:
            return self.names[logical]
        ns = f"{self.prefix}-{len(self.names)}"
        run([IP, "netns", "add", ns])
        self._created.append(ns)
        self.names[logical] = ns
        self._up[ns] = ["lo"]
        return ns

    def link(self, ns_a: str, if_a: str, ns_b: str, if_b: str) -> None:
        """Queue a veth pair with one end in each namespace; :meth:`commit` creates them in one batch."""
        for n in (if_a, if_b):
            if not valid_ifname(n):
                raise LabError(f"{n!r} is not a valid Linux interface name")
        self._batch_links.append(f"link add name {if_a} netns {ns_a} type veth peer name {if_b} netns {ns_b}")
        self._up[ns_a].append(if_a)
        self._up[ns_b].append(if_b)

    def commit(self) -> None:
        """Create queued links with one `ip -batch` (thousands of links in a second) and bring all up."""
        if self._batch_links:
            self._ip_batch(None, self._batch_links)
            self._batch_links = []
        for ns, ifs in self._up.items():
            if ifs:
                self._ip_batch(ns, [f"link set {i} up" for i in ifs])
        self._up = {ns: [] for ns in self._up}

    def _ip_batch(self, ns: str | None, lines: list[str]) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".ip", delete=False) as f:
            f.write("\n".join(lines) + "\n")
            path = f.name
        try:
            run([IP] + (["-n", ns] if ns else []) + ["-batch", path], timeout=300)
        finally:
            os.unlink(path)

    def set_link(self, ns: str, ifname: str, up: bool) -> None:
        run([IP, "-n", ns, "link", "set", ifname, "up" if up else "down"])

    def exec(self, ns: str, cmd: list[str], **kw) -> subprocess.CompletedProcess:
        return run([IP, "netns", "exec", ns] + cmd, **kw)

    # -------------------------------------------------------------- sysctls
    def raise_neighbour_tables(self, threshold: int) -> None:
        """Raise gc_thresh1..3 to at least ``threshold`` (never lower them) for as long as the run lives."""
        targets = (threshold // 4, threshold // 2, threshold)  # thresh1 < thresh2 < thresh3
        for i, path in enumerate(NEIGH_SYSCTLS):
            self.run.raise_sysctl(path, targets[i % 3])

    def close(self) -> None:
        """Delete the namespaces this object created (veths go with them) and restore sysctls."""
        if self._closed:
            return
        self._closed = True
        for ns in reversed(self._created):
            subprocess.run([IP, "netns", "del", ns], capture_output=True, timeout=60)
        self._created = []
        if self._own_run:
            self.run.close()
        try:
            atexit.unregister(self.close)
        except Exception:
            pass


def new_prefix() -> str:
    """A per-run prefix for namespaces and work folders: short (``ip netns list`` stays readable)."""
    return f"tw{os.getpid() % 100000}{secrets.token_hex(2)}"


def leftover(prefix: str) -> list[str]:
    """Namespaces that still carry ``prefix`` (tests assert a run leaves none behind)."""
    out = run([IP, "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.split() and line.split()[0].startswith(prefix + "-")]


def require_root(binaries: Iterable[str] = ()) -> str | None:
    """Why a lab cannot run here (not root, a binary missing), or None when it can."""
    import shutil

    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for b in binaries:
        if not (shutil.which(b) or Path(b).is_file()):
            return f"{b} not installed"
    return None
