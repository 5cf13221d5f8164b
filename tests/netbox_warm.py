"""Start the tests' NetBox in the background as soon as pytest knows a selected test needs it.

On a fresh machine NetBox's environment (pip) and its database migrations take about 7 minutes; run
in a thread from the end of collection, they overlap the rest of the suite (which leaves the second
core mostly idle) instead of adding to it. When test_netbox_live is selected, the thread then loads the
lab sites' import sets through NetBox's bulk-import pages (tests/netbox_load.py, minutes of NetBox's
own CPU). The session fixtures in conftest.py wait for the thread.
The thread's messages go to ``warm.log`` in the NetBox cache, never to a test's captured output.
"""

from __future__ import annotations

import threading
import time

import netbox_server


class Warm:
    """The one background preparation of this session: the venv, then (when wanted) the server."""

    def __init__(self, want_server: bool, want_loaded: bool = False) -> None:
        self.want_server = want_server
        self.want_loaded = want_server and want_loaded
        self.loaded: dict | None = None  # tests/netbox_load.load_all's answer, once the server is up
        self.load_error: BaseException | None = None
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
            return
        finally:
            self.done.set()
        if self.want_loaded and self.server is not None:
            self._load()

    def _load(self) -> None:
        """The import sets, while the suite goes on: the fixture that reads them joins the thread."""
        import netbox_load

        t0 = time.monotonic()
        try:
            self.loaded = netbox_load.load_all(self.server)
            self._log(f"import sets loaded in {time.monotonic() - t0:.0f} s")
        except BaseException as e:
            self.load_error = e
            self._log(f"loading the import sets failed: {e!r}")

    def wait(self) -> None:
        self.done.wait()

    def join(self) -> None:
        """Wait for the whole thread, the background import included."""
        self.thread.join()

    def close(self) -> None:
        self.join()
        if self.server is not None:
            self.server.close()
            self.server = None
