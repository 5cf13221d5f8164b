"""The sweep's local Dask cluster, private to the process that starts it.

A Dask scheduler runs whatever a connected client submits, and a worker whatever the scheduler sends:
anyone who can connect can run code as the sweep's user. So the cluster listens on loopback only and
speaks TLS with mutual authentication (``distributed.security.Security.temporary()``: a key and a
self-signed certificate made in memory for this run and never written to disk). The scheduler, the
nannies and the workers accept only a peer that presents that certificate; another local user's
client (plain TCP, TLS without a certificate, or TLS with a certificate of its own) is refused before
it can send a task.

Dask also starts an HTTP server in the scheduler (the dashboard, on 8787 by default, even with
``dashboard_address=None``) and in every worker (metrics, health). Unless a dashboard is asked for,
their routes are emptied before they start and the servers are stopped once the cluster is up, so
nothing answers HTTP; the scheduler's is put on a free port first, so 8787 is never taken.

The workers' scratch space (spilled data, locks) is a folder the run makes itself with
``tempfile.mkdtemp`` (mode 0700, a name nobody could plant beforehand) and removes when the cluster
closes (:func:`remove_scratch`): never Dask's shared ``$TMPDIR/dask-scratch-space``, which another local
user can create first, or make a symbolic link, and so choose where a root sweep writes.

Running as root is allowed but warned about (:func:`root_warning`): every variant then runs as root.

An existing scheduler (``--scheduler``, :class:`Remote`) is trusted with more than the sweep: it runs
what the client submits, and the client unpickles what it answers, so whoever sits between the two can
run code on either side. A scheduler is therefore reached over ``tls://`` with the certificate
authority, certificate and key its operator issued (``--tls-ca-file``, ``--tls-cert``, ``--tls-key``);
plain ``tcp://`` is refused unless the user says the network is theirs (``--insecure``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

HOST = "127.0.0.1"


def root_warning() -> str | None:
    """A warning when the sweep runs as root (its workers run every variant with root's rights)."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return ("warning: twin sweep runs as root: its Dask workers build every variant with root's rights; "
                "run it as an ordinary user")
    return None


@dataclass(frozen=True)
class Remote:
    """An existing Dask scheduler and how to reach it."""

    address: str
    ca_file: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    insecure: bool = False

    def problem(self) -> str | None:
        """Why this scheduler may not be used as given (None: it may)."""
        scheme = self.address.split("://", 1)[0] if "://" in self.address else "tcp"
        files = {"--tls-ca-file": self.ca_file, "--tls-cert": self.cert, "--tls-key": self.key}
        if scheme == "tls":
            missing = [k for k, v in files.items() if v is None]
            if missing:
                return (f"--scheduler {self.address}: tls:// needs the certificate authority, certificate and key the "
                        f"scheduler's operator issued; missing {', '.join(missing)}")
            unreadable = [f"{k} {v}" for k, v in files.items() if not Path(v).is_file()]
            return f"cannot read {', '.join(unreadable)} (expected a PEM file)" if unreadable else None
        if scheme == "tcp":
            if self.insecure:
                return None
            return (f"--scheduler {self.address}: plain TCP lets anyone on the network run code as this user (a scheduler "
                    "runs what its clients submit, and the client unpickles what it answers); use tls:// with "
                    "--tls-ca-file, --tls-cert and --tls-key, or --insecure for a scheduler on a network only you use")
        return f"--scheduler {self.address}: unknown protocol '{scheme}://' (expected tls:// or tcp://)"

    def client(self, timeout: float):
        """A client on this scheduler (raises OSError, TimeoutError or ValueError when it cannot connect)."""
        from distributed import Client
        from distributed.security import Security

        if self.address.startswith("tls://"):
            security = Security(tls_ca_file=str(self.ca_file), tls_client_cert=str(self.cert), tls_client_key=str(self.key),
                                require_encryption=True)
            return Client(self.address, timeout=timeout, security=security, set_as_default=False)
        return Client(self.address, timeout=timeout, set_as_default=False)


def private_cluster(workers: int, dashboard: str | None = None):
    """A client on a new LocalCluster of ``workers`` processes (one thread each) that only this process
    can reach; with ``dashboard`` (e.g. ``127.0.0.1:8787``) the scheduler serves Dask's dashboard there."""
    import dask
    from distributed import Client, LocalCluster
    from distributed.security import Security

    security = Security.temporary()  # require_encryption: tls:// everywhere, certificates checked both ways
    quiet = {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": []}
    scratch = tempfile.mkdtemp(prefix="twin-sweep-")  # 0700, made by this run: no other user's folder or link
    try:
        with dask.config.set({"temporary-directory": scratch}), dask.config.set(quiet) if dashboard is None else contextlib.nullcontext():
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host=HOST, protocol="tls://",
                                   security=security, dashboard_address=dashboard or f"{HOST}:0", local_directory=scratch,
                                   worker_dashboard_address=None, silence_logs=logging.CRITICAL)
            # CRITICAL, not ERROR: at shutdown a worker whose heartbeat meets the closing scheduler logs a
            # traceback at ERROR (seen once in CI, "Failed to communicate with scheduler during heartbeat");
            # a worker that fails a variant or dies is reported through its future, not its log
    except BaseException:
        remove_scratch(scratch)
        raise
    cluster.twin_scratch = scratch
    try:
        client = Client(cluster, security=security, set_as_default=False)
        if dashboard is None:
            cluster.sync(_stop_scheduler_http, cluster.scheduler)
            client.run(_stop_worker_http)
    except BaseException:
        cluster.close()
        remove_scratch(scratch)
        raise
    return client


def remove_scratch(folder: str | None) -> None:
    """The run's scratch folder removed (after its cluster closed); never a path another user chose."""
    if folder and Path(folder).name.startswith("twin-sweep-"):
        shutil.rmtree(folder, ignore_errors=True)


async def _stop_scheduler_http(scheduler) -> None:
    scheduler.http_server.stop()


def _stop_worker_http(dask_worker) -> bool:
    """Run on every worker (``Client.run``): close its HTTP server."""
    dask_worker.http_server.stop()
    return True
