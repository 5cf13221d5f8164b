"""Real FRR (zebra + bgpd, optionally bfdd) per switch, one network namespace each.

Recipe from measurements on this kind of machine: every FRR path is private to a per-switch folder
(``-z`` zserv socket, ``--vty_socket``, pid files) because unix sockets are not per namespace; the
integrated config is pushed with ``vtysh -b``; daemons are stopped by the pids in their own pid files
(checked against their command line, so a recycled pid is never signalled). Everything a run creates
lives under one prefix and one temporary folder and is removed on close, error or interpreter exit;
the run is recorded first (:class:`twin.verify.runs.Run`), so if this process dies by a signal it
cannot catch (SIGKILL, the OOM killer) its watchdog, the next run or ``twin verify --cleanup`` kills the
daemons (each names the work folder on its command line), deletes the namespaces and the folder and
gives the sysctls back.

Example::

    with FrrLab(switches, links, hosts) as lab:
        lab.start()
        lab.wait(lambda: lab.all_established(), timeout=60)
        print(lab.bgp_summary("z1-ctsw-01"))
"""

from __future__ import annotations

import atexit
import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from twin.verify.netns import LabError, Namespaces, new_prefix, run
from twin.verify.preflight import frr_lib
from twin.verify.runs import Run
from twin.verify.topology import hostname

VTYSH = "vtysh"


@dataclass(frozen=True)
class Switch:
    name: str
    config: str  # integrated frr.conf text


@dataclass(frozen=True)
class Link:
    a: str
    a_if: str
    b: str
    b_if: str


@dataclass(frozen=True)
class HostAttachment:
    """A rack's GPU subnet: a veth from ``switch``/``ifname`` (the gateway, configured by FRR) into a
    per-rack hosts namespace holding ``host_ip`` (CIDR) with a default route to ``gateway``."""

    rack: str
    switch: str
    ifname: str
    host_ip: str
    gateway: str
    host_ip6: str | None = None
    gateway6: str | None = None


def binaries(bfd: bool = False) -> list[str]:
    return [VTYSH, str(frr_lib() / "zebra"), str(frr_lib() / "bgpd")] + ([str(frr_lib() / "bfdd")] if bfd else [])


class FrrLab:
    """One FRR instance per switch in its own namespace, links as veth pairs, hosts per rack."""

    def __init__(
        self,
        switches: Iterable[Switch],
        links: Iterable[Link],
        hosts: Iterable[HostAttachment] = (),
        *,
        bfd: bool = False,
        prefix: str | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.switches = {s.name: s for s in switches}
        self.links = list(links)
        self.hosts = list(hosts)
        self.bfd = bfd
        self.log = log or (lambda _m: None)
        n = len(self.switches)
        bad = [s for s in self.switches if not hostname(s)]
        if bad:
            raise LabError(f"{bad[0]!r} is not a hostname; a switch name becomes a folder and a namespace")
        prefix = prefix or new_prefix()
        self.workdir = Path(tempfile.gettempdir()) / f"{prefix}-frr"
        self.run = Run(prefix)
        self.run.add_workdir(self.workdir)  # recorded before it exists: a kill in between leaves nothing unknown
        # ~4 neighbour entries per link end and host, in one kernel-wide table: leave headroom.
        self.ns = Namespaces(prefix=prefix, neigh_threshold=max(4096, 16 * (len(self.links) + len(self.hosts) + n)), run=self.run)
        self.workdir.mkdir(mode=0o700)
        self.swns: dict[str, str] = {}
        self.hostns: dict[str, str] = {}
        self._pids: list[tuple[int, str]] = []  # (pid, marker in its command line)
        self.peak_rss = 0  # bytes, all daemons of this lab together
        self._closed = False
        atexit.register(self.close)

    # -------------------------------------------------------------- lifecycle
    def __enter__(self) -> "FrrLab":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        """Namespaces, links, hosts, daemons, configs. Raises LabError with the daemon's words."""
        self.ns.__enter__()
        frr = pwd.getpwnam("frr")
        os.chown(self.workdir, frr.pw_uid, frr.pw_gid)
        for name in sorted(self.switches):
            self.swns[name] = self.ns.add(name)
        for link in self.links:
            self.ns.link(self.swns[link.a], link.a_if, self.swns[link.b], link.b_if)
        for h in self.hosts:
            hns = self.ns.add("hosts:" + h.rack)
            self.hostns[h.rack] = hns
            self.ns.link(self.swns[h.switch], h.ifname, hns, "eth0")
        self.log(f"{len(self.swns)} switch and {len(self.hostns)} host namespaces; creating {len(self.links)} links")
        self.ns.commit()
        self._configure_hosts()
        self.log("starting FRR daemons")
        with ThreadPoolExecutor(max_workers=8) as ex:
            list(ex.map(lambda n: self._start_daemons(n, frr), sorted(self.switches)))
        self.log("pushing configs")
        with ThreadPoolExecutor(max_workers=4) as ex:
            list(ex.map(self._push, sorted(self.switches)))
        self.sample_memory()

    def _configure_hosts(self) -> None:
        for h in self.hosts:
            ns = self.hostns[h.rack]
            lines = [f"addr add {h.host_ip} dev eth0", f"route add default via {h.gateway}"]
            if h.host_ip6 and h.gateway6:
                lines += [f"-6 addr add {h.host_ip6} dev eth0 nodad", f"-6 route add default via {h.gateway6}"]
            for line in lines:
                run(["ip", "-n", ns] + line.split())

    def dir(self, name: str) -> Path:
        """The switch's folder in the work folder (a hostname cannot climb out of it)."""
        if not hostname(name):
            raise LabError(f"{name!r} is not a hostname")
        return self.workdir / name

    def _start_daemons(self, name: str, frr: pwd.struct_passwd) -> None:
        d = self.dir(name)
        d.mkdir()
        daemons = ["zebra", "bgpd"] + (["bfdd"] if self.bfd else [])
        for daemon in daemons:
            (d / f"{daemon}.conf").write_text("")
        (d / "vtysh.conf").write_text("service integrated-vtysh-config\n")
        (d / "frr.conf").write_text(self.switches[name].config)
        for p in d.iterdir():
            os.chown(p, frr.pw_uid, frr.pw_gid)
        os.chown(d, frr.pw_uid, frr.pw_gid)
        for daemon in daemons:
            cmd = [
                "ip", "netns", "exec", self.swns[name], str(frr_lib() / daemon), "-d", "-F", "datacenter", "-P", "0",
                "-i", str(d / f"{daemon}.pid"), "-z", str(d / "zserv.api"), "--vty_socket", str(d),
                "-f", str(d / f"{daemon}.conf"), "--log", f"file:{d / daemon}.log",
            ]
            run(cmd, timeout=30)
            pid = self._wait_pid(d / f"{daemon}.pid")
            self._pids.append((pid, str(d)))
            if daemon == "zebra":
                self._wait_file(d / "zserv.api")
            self._wait_file(d / f"{daemon}.vty")

    @staticmethod
    def _wait_file(path: Path, timeout: float = 20.0) -> None:
        end = time.monotonic() + timeout
        while not path.exists():
            if time.monotonic() > end:
                raise LabError(f"{path} did not appear within {timeout:g} s")
            time.sleep(0.02)

    def _wait_pid(self, path: Path) -> int:
        self._wait_file(path)
        for _ in range(100):
            txt = path.read_text().strip()
            if txt.isdigit():
                return int(txt)
            time.sleep(0.02)
        raise LabError(f"{path} holds no pid")

    def _push(self, name: str) -> None:
        d = self.dir(name)
        p = run([VTYSH, "--vty_socket", str(d), "--config_dir", str(d), "-b"], timeout=120, check=False)
        if p.returncode != 0:
            raise LabError(f"{name}: vtysh -b exited {p.returncode}: {(p.stdout + p.stderr).strip()[-2000:]}")

    def close(self) -> None:
        """Stop our daemons (by pid, command line checked), delete our namespaces and files."""
        if self._closed:
            return
        self._closed = True
        # also daemons whose pid was not yet recorded when start() failed: their pid files say
        known = {pid for pid, _ in self._pids}
        for f in sorted(self.workdir.glob("*/*.pid")):
            txt = f.read_text().strip() if f.is_file() else ""
            if txt.isdigit() and int(txt) not in known:
                self._pids.append((int(txt), str(f.parent)))
        alive = [pid for pid, marker in self._pids if _is_ours(pid, marker)]
        for pid in alive:
            _signal(pid, signal.SIGTERM)
        end = time.monotonic() + 5
        while time.monotonic() < end and any(_is_ours(pid, m) for pid, m in self._pids):
            time.sleep(0.05)
        for pid, marker in self._pids:
            if _is_ours(pid, marker):
                _signal(pid, signal.SIGKILL)
        self._pids = []
        self.ns.close()
        shutil.rmtree(self.workdir, ignore_errors=True)
        self.run.close()
        try:
            atexit.unregister(self.close)
        except Exception:
            pass

    # -------------------------------------------------------------- queries
    def vtysh(self, name: str, command: str, timeout: float = 30) -> str:
        d = self.dir(name)
        return run([VTYSH, "--vty_socket", str(d), "--config_dir", str(d), "-c", command], timeout=timeout).stdout

    def vtysh_json(self, name: str, command: str) -> dict:
        out = self.vtysh(name, command)
        try:
            return json.loads(out) if out.strip() else {}
        except json.JSONDecodeError as e:
            raise LabError(f"{name}: '{command}' did not return JSON: {out[:200]!r}") from e

    def bgp_summary(self, name: str) -> dict[str, str]:
        """peer (address or interface) -> state, e.g. {'10.252.0.1': 'Established'}."""
        js = self.vtysh_json(name, "show bgp summary json")
        peers: dict[str, str] = {}
        for afi in js.values():
            if isinstance(afi, dict):
                for peer, info in afi.get("peers", {}).items():
                    st = info.get("state", "?")
                    if peers.get(peer) != "Established":
                        peers[peer] = st
        return peers

    def ip_routes(self, name: str, af: str = "ip") -> dict[str, int]:
        """prefix -> number of active FIB next hops of the selected route, from FRR's RIB (``af``: ip, ipv6)."""
        js = self.vtysh_json(name, f"show {af} route json")
        return {p: _fib_width(entries) for p, entries in js.items()}

    def kernel_routes(self, name: str, af: str = "-4") -> dict[str, int]:
        """prefix -> next hops in the kernel FIB (what packets use; ``af``: -4, -6); cheap enough to poll."""
        out = run(["ip", af, "-j", "-n", self.swns[name], "route", "show"], timeout=30).stdout
        routes: dict[str, int] = {}
        for r in json.loads(out or "[]"):
            dst = r.get("dst", "")
            if dst == "default":
                continue
            if "/" not in dst:
                dst += "/32" if af == "-4" else "/128"
            routes[dst] = len(r.get("nexthops", [])) or 1
        return routes

    def bfd_peers(self, name: str) -> dict[str, str]:
        js = json.loads(self.vtysh(name, "show bfd peers json") or "[]")
        return {p.get("peer", "?") + "%" + p.get("interface", ""): p.get("status", "?") for p in js}

    def link_state(self, switch: str, ifname: str, up: bool) -> None:
        self.ns.set_link(self.swns[switch], ifname, up)

    def ping(self, rack: str, dst: str, count: int = 1, timeout: float = 2) -> bool:
        ns = self.hostns[rack]
        p = subprocess.run(
            ["ip", "netns", "exec", ns, "ping", "-n", "-q", "-c", str(count), "-W", str(int(timeout)), dst],
            capture_output=True, timeout=timeout * count + 10,
        )
        return p.returncode == 0

    def sample_memory(self) -> int:
        """Total RSS of our daemons now; keeps the peak in :attr:`peak_rss`."""
        total = 0
        for pid, _marker in self._pids:
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
            except OSError:
                pass
        self.peak_rss = max(self.peak_rss, total)
        return total

    def daemon_logs(self, name: str, tail: int = 20) -> str:
        out = []
        for f in sorted(self.dir(name).glob("*.log")):
            out.append(f"--- {f.name}\n" + "\n".join(f.read_text(errors="replace").splitlines()[-tail:]))
        return "\n".join(out)


def wait(predicate: Callable[[], bool], timeout: float, interval: float = 0.5) -> bool:
    end = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() > end:
            return False
        time.sleep(interval)


def _fib_width(entries: list[dict]) -> int:
    for e in entries:
        if e.get("selected") and e.get("installed", e.get("protocol") == "connected"):
            return sum(1 for nh in e.get("nexthops", []) if nh.get("fib") or nh.get("active"))
    return 0


def _is_ours(pid: int, marker: str) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return marker in cmdline


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
