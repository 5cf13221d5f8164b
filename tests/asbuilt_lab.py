"""A plan's cables as veth pairs in network namespaces with real lldpd (Debian's package) on every
device, and lldpd's own JSON read back: the real-software side of ``twin as-built``'s tests.

One namespace per device that runs LLDP (each switch; each server, whose NICs are interfaces
``nic1``..``nicN``). Switch ends are named as the plan names the port and configured the way SONiC's
lldpmgrd configures lldpd (``configure ports <port> lldp portidsubtype local <alias> description
<peer>``); servers keep lldpd's Linux defaults (port id = MAC, interface name in the description),
the quirk the reader has to meet. Every lldpd gets its own control socket and is stopped, with its
namespace, on close: nothing of a run is left behind (``leftover`` says so).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from twin.asbuilt.plan import End, Plan
from twin.verify.netns import Namespaces, run


def binaries() -> list[str]:
    return ["ip", "lldpd", "lldpcli"]


class LldpLab:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.ns = Namespaces(prefix=f"twlldp{os.getpid() % 100000}")
        self.work = Path(tempfile.mkdtemp(prefix="twin-lldp-"))
        self.work.chmod(0o755)  # lldpcli drops to lldpd's user: it must reach the sockets and config files
        self.procs: dict[str, subprocess.Popen] = {}
        self.host = {nic: (s, i) for (s, i), nic in plan.host_iface.items()}
        self.cables: set[frozenset] = set()
        self.groups: list[int] = []  # process groups of the lldpds started (each daemon and its privilege-separated child)

    def __enter__(self) -> LldpLab:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def where(self, end: End) -> tuple[str, str]:
        """(device that runs lldpd, interface name) of a plan end."""
        dev, port = end
        if dev in self.host:
            return self.host[dev]
        return dev, port

    def wire(self, wiring: dict[End, End]) -> None:
        """Create a veth pair per cable of ``wiring`` (each end in its device's namespace)."""
        for x, y in wiring.items():
            if x < y:
                (dx, ix), (dy, iy) = self.where(x), self.where(y)
                self.ns.link(self.ns.add(dx), ix, self.ns.add(dy), iy)
                self.cables.add(frozenset((x, y)))
        self.ns.commit()

    def unwire(self, x: End) -> None:
        """Remove the cable at end ``x`` (deleting one end of a veth pair deletes both)."""
        d, i = self.where(x)
        run(["ip", "-n", self.ns.names[d], "link", "del", i])
        self.cables = {c for c in self.cables if x not in c}

    def down(self, x: End) -> None:
        d, i = self.where(x)
        self.ns.set_link(self.ns.names[d], i, False)

    def start(self) -> None:
        """One lldpd per namespace, sending every second."""
        for dev, ns in self.ns.names.items():
            sock = self.work / f"{len(self.procs)}.sock"
            self.procs[dev] = subprocess.Popen(["ip", "netns", "exec", ns, "lldpd", "-d", "-u", str(sock), "-O", "/dev/null"],
                                               stdout=open(self.work / f"{dev}.log", "w"), stderr=subprocess.STDOUT, start_new_session=True)
            self.groups.append(self.procs[dev].pid)
        for dev in self.procs:
            self._wait_socket(dev)
            self.configure(dev)

    def sock(self, dev: str) -> str:
        return str(self.work / f"{list(self.procs).index(dev)}.sock")

    def _wait_socket(self, dev: str, timeout: float = 20) -> None:
        end = time.monotonic() + timeout
        while not Path(self.sock(dev)).exists():
            if self.procs[dev].poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"lldpd for {dev} did not start: {(self.work / f'{dev}.log').read_text()[-500:]}")
            time.sleep(0.05)

    def configure(self, dev: str) -> None:
        """System name, a one-second interval (entries live 10 s: a busy machine may starve a daemon
        for a moment), on a switch SONiC's per-port settings, and ``resume``: lldpd starts paused
        until an lldpcli resumes it, and its own call may come before the socket is ready."""
        lines = [f"configure system hostname {dev}", "configure lldp tx-interval 1", "configure lldp tx-hold 10"]
        model = self.plan.devices[dev].model if dev in self.plan.devices else None
        alias = {name: a for a, name in self.plan.port_alias.get(model or "", {}).items() if a != name}
        ns = self.ns.names[dev]
        ifaces = run(["ip", "-n", ns, "-o", "link", "show"]).stdout
        for line in ifaces.splitlines():
            name = line.split(":")[1].strip().split("@")[0]
            if name in alias:
                lines.append(f"configure ports {name} lldp portidsubtype local {alias[name]} description {dev}:{name}")
        conf = self.work / f"{dev}.conf"
        conf.write_text("\n".join(lines + ["resume"]) + "\n")
        run(["lldpcli", "-u", self.sock(dev), "-c", str(conf)])

    def show(self, dev: str) -> str:
        return run(["lldpcli", "-u", self.sock(dev), "-f", "json", "show", "neighbors"]).stdout

    def settle(self, want: dict[str, int], timeout: float = 60) -> None:
        """Wait until every device lists ``want[dev]`` neighbours (the cables up at it)."""
        import json

        end = time.monotonic() + timeout
        heal = time.monotonic() + 5
        while True:
            behind = {}
            for dev, n in want.items():
                ifs = json.loads(self.show(dev)).get("lldp", {}).get("interface") or []
                ifs = [ifs] if isinstance(ifs, dict) else ifs
                got = len(ifs)
                # a neighbour heard before its own lldpcli set its name announces the machine's hostname:
                # settled only once every neighbour names itself as a lab device
                strangers = sorted({c for entry in ifs for port in entry.values()
                                    for c in (port.get("chassis") or {}) if c != "id" and c not in self.procs})
                if got != n or strangers:
                    behind[dev] = (got, n, strangers[:3])
            if not behind:
                return
            if time.monotonic() > heal:
                # a daemon that still announces another name (its configuration raced its start) is configured again
                heal = time.monotonic() + 5
                for dev in self.misnamed():
                    self.configure(dev)
            if time.monotonic() > end:
                dev = next(iter(behind))
                stats = run(["lldpcli", "-u", self.sock(dev), "show", "statistics", "summary"], check=False).stdout
                log = (self.work / f"{dev}.log").read_text()[-1500:]
                raise RuntimeError(f"lldpd did not settle: {dict(list(behind.items())[:5])} misnamed: {self.misnamed()[:5]}\n{stats}\n{log}")
            time.sleep(0.5)

    def misnamed(self) -> list[str]:
        """Devices whose own lldpd announces a chassis name other than the device's."""
        import json

        wrong = []
        for dev in self.procs:
            local = json.loads(run(["lldpcli", "-u", self.sock(dev), "-f", "json", "show", "chassis"]).stdout)
            if dev not in (local.get("local-chassis", {}).get("chassis") or {}):
                wrong.append(dev)
        return wrong

    def collect(self, folder: Path) -> None:
        """``lldpcli show neighbors -f json`` of every device into ``folder/<device>.json``."""
        folder.mkdir(parents=True, exist_ok=True)
        for dev in self.procs:
            (folder / f"{dev}.json").write_text(self.show(dev))

    def close(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                    p.wait(timeout=10)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    p.wait(timeout=10)
        self.procs = {}
        self.ns.close()
        shutil.rmtree(self.work, ignore_errors=True)


def running(groups: list[int]) -> list[int]:
    """Processes still running (not zombies) in any of these process groups."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) in groups:
            out.append(int(stat.parent.name))
    return out
