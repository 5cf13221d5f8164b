"""Start the tests' NetBox in the background as soon as pytest knows a selected test needs it.

On a fresh machine NetBox's environment (pip) and its database migrations take about 7 minutes; run
in a thread from the end of collection, they overlap the rest of the suite (which leaves the second
core mostly idle) instead of adding to it. The session fixtures in conftest.py wait for the thread.
The thread's messages go to ``warm.log`` in the NetBox cache, never to a test's captured output.
"""

from __future__ import annotations

import threading
import time

import netbox_server


class Warm:
    """The one background preparation of this session: the venv, then (when wanted) the server."""

    def __init__(self, want_server: bool) -> None:
        self.want_server = want_server
        self.skip: str | None = None
        self.error: BaseException | None = None
        self.server: netbox_server.NetBoxServer | None = None
        self.package = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="netbox-warm", daemon=True)
        self.thread.start()

    def _log(self, message: str) -> None:
        netbox_server.CACHE.mkdir(parents=True, exist_ok=True)
        with open(netbox_server.CACHE / "warm.log", "a") as f:
            f.write(f"{time.strftime('%H:%M:%S')} {message}\n")

    def _run(self) -> None:
        try:
            self.skip = netbox_server.why_not()
            if self.skip:
                return
            netbox_server.ensure_venv(self._log)
            self.package = netbox_server.package_dir()
            if self.want_server:
                server = netbox_server.NetBoxServer(log=self._log)
                self.server = server.__enter__()
        except BaseException as e:  # handed to the fixture that waits, raised there
            self.error = e
        finally:
            self.done.set()

    def wait(self) -> None:
        self.done.wait()

    def close(self) -> None:
        self.done.wait()
        if self.server is not None:
            self.server.close()
            self.server = None
