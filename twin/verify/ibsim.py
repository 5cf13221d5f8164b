"""ibsim as a context manager, and what the real ``ibnetdiscover`` sees of a topology brought up in it
(``twin as-built``'s InfiniBand tests read a fabric back this way)."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

from twin.verify.ib import IbError, _client, _wait_sim, sm_host
from twin.verify.preflight import umad2sim


@contextmanager
def simulated(topology: Path, sm_conf: str = ""):
    """ibsim running ``topology`` (ibnetdiscover format) on a socket of its own; yields
    ``(client_env, work)``: the environment a libibumad client (OpenSM, ibnetdiscover) needs to talk
    to it, and the run's scratch folder. The simulator and the folder are removed on exit."""
    work = Path(tempfile.mkdtemp(prefix="twin-ib-"))
    sock = f"twin-ibsim-{os.getpid()}-{secrets.token_hex(3)}"
    env = {**os.environ, "IBSIM_SOCKNAME": sock, "OSM_CACHE_DIR": str(work), "OSM_TMP_DIR": str(work)}
    sim: subprocess.Popen | None = None
    try:
        net = work / "fabric.net"
        shutil.copy(topology, net)
        text = net.read_text()
        n_sw, n_ca = count_nodes(text)
        first_ca = re.search(r'^Hca\t\d+ "([^"]+)"', text, re.M)
        if not first_ca:
            raise IbError(f"{topology}: no Hca in the topology")
        # ibsim's console reads stdin: keep a pipe open so it stays up until we stop it.
        sim = subprocess.Popen(
            ["ibsim", "-s", "-N", str(max(2048, n_ca + n_sw + 16)), "-S", str(max(256, n_sw + 8)), str(net)],
            stdin=subprocess.PIPE, stdout=open(work / "ibsim.log", "w"), stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
        )
        client_env = {**env, "LD_PRELOAD": umad2sim(), "SIM_HOST": sm_host(sm_conf, text) or first_ca.group(1)}
        _wait_sim(sim, client_env, work)
        yield client_env, work
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


def count_nodes(text: str) -> tuple[int, int]:
    """(switches, HCAs) of a topology in ibnetdiscover format."""
    return text.count("\nSwitch\t") + text.startswith("Switch\t"), text.count("\nHca\t") + text.startswith("Hca\t")


def discover(topology: Path, timeout: float = 120.0) -> str:
    """What the real ``ibnetdiscover`` prints for ``topology`` brought up in ibsim (no subnet manager
    runs: ibnetdiscover sweeps with directed-route SMPs, so it needs no LIDs)."""
    with simulated(topology) as (env, _work):
        p = _client(["ibnetdiscover"], env, timeout)
        if p.returncode != 0:
            raise IbError(f"ibnetdiscover exited {p.returncode}: {(p.stdout + p.stderr)[-500:]}")
        return p.stdout
