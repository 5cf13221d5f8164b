"""Real OpenSM routing a simulated InfiniBand fabric (ibsim), checked from the forwarding tables.

Why each precaution: OpenSM exits 0 and silently falls back to min-hop routing when the configured
engine cannot route (bad root-GUID file, unknown name), so the log must say "<engine> tables
configured on all switches"; a libibumad client pointed at a simulator that is not running hangs and
ignores SIGTERM, so every client call runs under ``timeout -k``; simulators of parallel runs would
talk to each other through the default socket name, so each run gets its own ``IBSIM_SOCKNAME``.
Nothing here needs root.

Example::

    result = route_fabric(Path("generated/lab-ib"))
    assert result.ok, result.problems
"""

from __future__ import annotations

import ctypes
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from twin.folder import FolderError, printable, read_bytes
from twin.lang.site.models import ADAPTIVE_ENGINES
from twin.verify.ib_tables import check_routes, link_widths, parse_dump_fts, parse_ibnetdiscover, width_mismatches
from twin.verify.preflight import check_ib, umad2sim
from twin.verify.runs import Run


class IbError(RuntimeError):
    pass


@dataclass
class IbResult:
    engine: str
    engine_in_use: bool
    hcas: int
    switches: int
    pairs_checked: int
    unrouted: int
    loops: int
    max_hops: int
    route_seconds: float
    total_seconds: float
    problems: list[str] = field(default_factory=list)
    # what OpenSM programmed, for a caller comparing tables: (nodes, ports, lfts) as ib_tables parses them
    tables: tuple | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict:
        return {**{k: v for k, v in self.__dict__.items() if k != "tables"}, "ok": self.ok}


def missing_binaries() -> str | None:
    """Why OpenSM on ibsim cannot run here (the first missing program and its Debian package), or None."""
    return check_ib()


FILE_OPTIONS = {"root_guid_file": "root_guids.conf", "partition_config_file": "partitions.conf",
                "cn_guid_file": "cn_guids.conf", "io_guid_file": "io_guids.conf"}
# the options twin's opensm.conf template writes, each with what its value must be: OpenSM runs as the
# caller (root, often), and other options name files it reads or writes, or a plugin it loads
VALUE_OPTIONS = {"guid": re.compile(r"0x[0-9a-fA-F]{1,16}"), "routing_engine": re.compile(r"[a-z0-9_-]+(,[a-z0-9_-]+)*"),
                 "lmc": re.compile(r"[0-7]"), "sm_priority": re.compile(r"[0-9]{1,2}"), "max_reverse_hops": re.compile(r"[0-9]{1,3}"),
                 "sweep_interval": re.compile(r"[0-9]{1,6}"), "max_wire_smps": re.compile(r"[0-9]{1,4}")}
CONF_LIMIT = 1 * 2**20  # bytes of opensm.conf and each file it names
NET_LIMIT = 512 * 2**20  # bytes of topology.net (a 24K-GPU fabric has ~10 MB)


def _rewrite_conf(conf: str, files: dict[str, Path], where: str = "opensm.conf") -> tuple[str, str]:
    """Point the generated opensm.conf's file options at the run's copies (``files``: option ->
    path); return (conf, engine). Only the options twin writes are accepted (FolderError at the line).

    >>> _rewrite_conf("routing_engine ar_ftree", {})
    ('routing_engine ftree\\n', 'ftree')
    """
    engine = "minhop"
    out = []
    for n, line in enumerate(conf.splitlines(), 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            out.append(line)
            continue
        key, value = words[0], " ".join(words[1:])
        if key in FILE_OPTIONS:
            if key not in files:
                raise FolderError(f"{where}:{n}: {key} names a file the folder does not have (expected {FILE_OPTIONS[key]} beside opensm.conf)")
            line = f"{key} {files[key]}"
        elif key in VALUE_OPTIONS:
            if len(words) != 2 or not VALUE_OPTIONS[key].fullmatch(value):
                raise FolderError(f"{where}:{n}: {key} {printable(value, 60)!r} is not a value twin writes for it")
        else:
            raise FolderError(f"{where}:{n}: {printable(key, 60)!r} is not an option twin writes (it accepts "
                              f"{', '.join(sorted(VALUE_OPTIONS) + sorted(FILE_OPTIONS))}); OpenSM would run with it as this user")
        if key == "routing_engine":
            # an adaptive engine (ar_ftree, ar_updn: NVIDIA's OpenSM) programs its base engine's tables as the default
            # routes and the AR groups beside them; upstream OpenSM under ibsim routes the base engine, whose tables are checked
            engine = ",".join(ADAPTIVE_ENGINES.get(e, e) for e in value.split(","))
            line = f"routing_engine {engine}"
        out.append(line)
    return "\n".join(out) + "\n", engine


def _text(folder: Path, name: str, limit: int) -> str:
    """A file of a generated folder as text (inside it, regular, capped, UTF-8: FolderError)."""
    data = read_bytes(folder, name, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FolderError(f"{folder / name}: not UTF-8 (byte {e.start})") from None


def _die_with_parent(sig: int) -> Callable[[], None]:
    """preexec_fn: the child gets ``sig`` when the process that started it dies (Linux prctl)."""
    def set_pdeathsig() -> None:
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, sig, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (AttributeError, OSError):
            pass
    return set_pdeathsig


def sm_host(conf: str, topology: str) -> str | None:
    """The node OpenSM runs on: the HCA whose port 1 GUID is the conf's ``guid`` (a subnet-manager
    attachment), else None (the first HCA of the topology).

    >>> sm_host("guid 0x0002c90500000101", 'Hca\t1 "H-0002c90500000100"\t\t# "ufm-01" subnet-manager')
    'H-0002c90500000100'
    """
    m = re.search(r"^guid\s+0x([0-9a-f]+)\s*$", conf, re.M)
    if not m:
        return None
    ref = f"H-{int(m.group(1), 16) - 1:016x}"
    return ref if f'"{ref}"' in topology else None


def route_fabric(opensm_dir: Path, topology: Path, timeout: float = 300.0, keep_tables: bool = False) -> IbResult:
    """Load ``topology`` (ibnetdiscover format) into ibsim, run OpenSM once with the generated
    ``opensm.conf`` (+ root GUIDs and partitions beside it) and check every HCA pair's route
    (``keep_tables``: the result carries the forwarding tables read back)."""
    t0 = time.monotonic()
    # every input read and checked before anything starts (FolderError: one located line)
    text = _text(topology.parent, topology.name, NET_LIMIT)
    copies = {key: _text(opensm_dir, name, CONF_LIMIT) for key, name in FILE_OPTIONS.items() if (opensm_dir / name).exists()}
    generated = _text(opensm_dir, "opensm.conf", CONF_LIMIT)
    prefix = f"twib{os.getpid() % 100000}{secrets.token_hex(2)}"
    work = Path(tempfile.gettempdir()) / f"{prefix}-ib"
    run = Run(prefix, netns=False)
    run.add_workdir(work)
    work.mkdir(mode=0o700)
    sock = f"twin-ibsim-{os.getpid()}-{secrets.token_hex(3)}"
    env = {**os.environ, "IBSIM_SOCKNAME": sock, "OSM_CACHE_DIR": str(work), "OSM_TMP_DIR": str(work)}
    sim: subprocess.Popen | None = None
    try:
        net = work / "fabric.net"
        net.write_text(text)
        n_sw = text.count("\nSwitch\t") + text.startswith("Switch\t")
        n_ca = text.count("\nHca\t") + text.startswith("Hca\t")
        first_ca = re.search(r'^Hca\t\d+ "([^"]+)"', text, re.M)
        if not first_ca:
            raise IbError(f"{topology}: no Hca in the topology")
        files = {}
        for key, body in copies.items():
            (work / FILE_OPTIONS[key]).write_text(body)
            files[key] = work / FILE_OPTIONS[key]
        conf, engine = _rewrite_conf(generated, files, str(opensm_dir / "opensm.conf"))
        (work / "opensm.conf").write_text(conf)

        # ibsim's console reads stdin: keep a pipe open so it stays up until we stop it.
        sim = subprocess.Popen(
            ["ibsim", "-s", "-N", str(max(2048, n_ca + n_sw + 16)), "-S", str(max(256, n_sw + 8)),
             "-P", str(max(13312, 2 * text.count("\n[") + n_sw + 16)), str(net)],
            stdin=subprocess.PIPE, stdout=open(work / "ibsim.log", "w"), stderr=subprocess.STDOUT, env=env,
            start_new_session=True, preexec_fn=_die_with_parent(signal.SIGKILL),
        )
        client_env = {**env, "LD_PRELOAD": umad2sim(), "SIM_HOST": sm_host(generated, text) or first_ca.group(1)}
        _wait_sim(sim, client_env, work)

        log = work / "osm.log"
        t1 = time.monotonic()
        p = _client(["opensm", "--once", "-F", str(work / "opensm.conf"), "-f", str(log)], client_env, timeout)
        route_s = time.monotonic() - t1
        osm_log = log.read_text(errors="replace") if log.exists() else ""
        problems: list[str] = []
        if p.returncode != 0:
            problems.append(f"opensm exited {p.returncode}: {(p.stdout + p.stderr)[-500:]}")
        in_use = f"{engine} tables configured on all switches" in osm_log
        if not in_use:
            fallback = re.findall(r"^.*(?:fall(?:ing)? back|failed|ERR).*$", osm_log, re.M)[:5]
            problems.append(f"OpenSM did not configure all switches with '{engine}'" + (": " + " | ".join(fallback) if fallback else ""))

        prtn = re.findall(r"^.*(?:prtn|partition).*(?:ERR|error|failed).*$|^.*ERR.*(?:prtn|partition).*$", osm_log, re.M | re.I)
        if prtn:
            problems.append("OpenSM rejected the partition file: " + " | ".join(x.strip() for x in prtn[:3]))
        disc = _client(["ibnetdiscover"], client_env, 120)
        # -a: every entry, not only those dump_fts calls valid (infiniband-diags 44 omits out ports above
        # 127, so a 144-port XDR switch's upper half looked unrouted); -n: no destination lookups.
        # check_routes itself rejects a port with no link behind it (0xff, or beyond the switch).
        fts = _client(["dump_fts", "-a", "-n"], client_env, 300)
        nodes, ports = parse_ibnetdiscover(disc.stdout)
        lfts = parse_dump_fts(fts.stdout)
        check = check_routes(nodes, ports, lfts)
        problems += check["problems"]
        problems += width_mismatches(link_widths(text), link_widths(disc.stdout))
        if check["hcas"] != n_ca:
            problems.append(f"ibnetdiscover found {check['hcas']} HCAs, topology has {n_ca}")
        if len(lfts) != n_sw:
            problems.append(f"dump_fts returned {len(lfts)} switch tables, topology has {n_sw}")
        return IbResult(
            engine=engine, engine_in_use=in_use, hcas=check["hcas"], switches=len(lfts),
            pairs_checked=check["pairs"], unrouted=check["unrouted"], loops=check["loops"], max_hops=check["max_hops"],
            route_seconds=round(route_s, 3), total_seconds=round(time.monotonic() - t0, 3), problems=problems,
            tables=(nodes, ports, lfts) if keep_tables else None,
        )
    finally:
        if sim is not None and sim.poll() is None:
            try:
                os.killpg(sim.pid, signal.SIGTERM)
                sim.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(sim.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                sim.wait(timeout=5)
        shutil.rmtree(work, ignore_errors=True)
        run.close()


def _client(cmd: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    """A libibumad client under ``timeout -k``: a hung client ignores SIGTERM."""
    # in the run's work folder: the preload library makes a fake sysfs `sys-<pid>` in the current folder,
    # which a killed client leaves behind (the work folder goes with the run)
    return subprocess.run(["timeout", "-k", "5", str(int(timeout))] + cmd, capture_output=True, text=True, env=env, timeout=timeout + 30,
                          cwd=env.get("OSM_TMP_DIR"), preexec_fn=_die_with_parent(signal.SIGTERM))  # timeout passes it on, then kills


def _wait_sim(sim: subprocess.Popen, env: dict, work: Path, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if sim.poll() is not None:
            raise IbError(f"ibsim exited {sim.returncode}: {(work / 'ibsim.log').read_text()[-1000:]}")
        log = (work / "ibsim.log").read_text(errors="replace")
        if "simulator ready" in log:
            return
        # ibsim's stdout may be block-buffered: fall back to asking the simulator itself.
        if _client(["ibstat", "-l"], env, 5).returncode == 0 and _client(["smpquery", "nodeinfo", "-D", "0"], env, 5).returncode == 0:
            return
        time.sleep(0.2)
    raise IbError("ibsim did not come up")
