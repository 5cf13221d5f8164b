"""A real browser for the tests: headless Chromium (Debian's ``chromium``) driven over the DevTools protocol.

The protocol runs over ``--remote-debugging-pipe`` (Chromium reads commands on fd 3 and writes replies
and events on fd 4, each a JSON message ended by a NUL byte), so no WebSocket client or extra package
is needed. :func:`open_page` loads a file, collects console errors, uncaught exceptions, log errors and
every network request, and answers with a :class:`Page` that can evaluate JavaScript, take a
screenshot of an element and print to PDF.

    with Browser() as b:
        page = b.open_page(Path("generated/lab-2zone/report.html"))
        print(page.load_ms, page.errors, page.box("#fig-fabric"))
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe"]


def chromium() -> str | None:
    """The Chromium binary, or None (the tests skip with this reason)."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class BrowserError(RuntimeError):
    pass


@dataclass
class Page:
    browser: Browser
    session: str
    url: str
    load_ms: float = 0.0
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def evaluate(self, expression: str):
        r = self.browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, self.session)
        if "exceptionDetails" in r:
            raise BrowserError(f"{expression[:60]}...: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def box(self, selector: str) -> dict | None:
        """Page coordinates and size of the first element matching ``selector``."""
        return self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " const r = e.getBoundingClientRect();"
            " return {x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height}; })()")

    def screenshot(self, selector: str) -> bytes:
        """PNG of the element matching ``selector`` (scale 1)."""
        b = self.box(selector)
        if not b:
            raise BrowserError(f"no element {selector}")
        r = self.browser.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                         "clip": {**b, "scale": 1}}, self.session)
        return base64.b64decode(r["data"])

    def pdf(self) -> bytes:
        r = self.browser.call("Page.printToPDF", {"printBackground": True, "preferCSSPageSize": True}, self.session)
        return base64.b64decode(r["data"])


class Browser:
    """One headless Chromium with a new, empty profile; ``with Browser() as b`` ends it."""

    def __init__(self, width: int = 1280, height: int = 900):
        exe = chromium()
        if exe is None:
            raise BrowserError("chromium is not installed (apt-get install chromium)")
        self.width, self.height = width, height
        self.profile = tempfile.mkdtemp(prefix="twin-chromium-")
        cmd_r, self.cmd_w = os.pipe()
        self.out_r, out_w = os.pipe()
        high_r, high_w = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10), fcntl.fcntl(out_w, fcntl.F_DUPFD, 10)
        args = [*FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"]
        # Chromium's pipe: it reads commands on fd 3 and writes on fd 4; bash puts the pipe ends there (dash takes one-digit fds only)
        self.proc = subprocess.Popen(["bash", "-c", f'exec "$0" "$@" 3<&{high_r} 4>&{high_w} {high_r}<&- {high_w}>&-', exe, *args],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     pass_fds=(high_r, high_w))
        for fd in (cmd_r, out_w, high_r, high_w):
            os.close(fd)
        self.next_id = 0
        self.buffer = b""
        self.events: list[dict] = []

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.send("Browser.close", {})
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.cmd_w, self.out_r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def send(self, method: str, params: dict, session: str | None = None) -> int:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def receive(self, timeout: float) -> dict:
        end = time.monotonic() + timeout
        while b"\0" not in self.buffer:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.out_r], [], [], left)[0]:
                raise BrowserError("no answer from chromium in time")
            chunk = os.read(self.out_r, 1 << 20)
            if not chunk:
                raise BrowserError("chromium closed its pipe")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict, session: str | None = None, timeout: float = 60.0) -> dict:
        want = self.send(method, params, session)
        while True:
            msg = self.receive(timeout)
            if msg.get("id") == want:
                if "error" in msg:
                    raise BrowserError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method: str, session: str, timeout: float = 30.0) -> dict:
        for k, e in enumerate(self.events):
            if e.get("method") == method and e.get("sessionId") == session:
                return self.events.pop(k)
        while True:
            msg = self.receive(timeout)
            if msg.get("method") == method and msg.get("sessionId") == session:
                return msg
            self.events.append(msg)

    def open_page(self, path: Path) -> Page:
        """Load ``path`` in a new tab; the page's load time is navigation start to the load event."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", {}, session)
        self.call("Emulation.setDeviceMetricsOverride", {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False}, session)
        url = Path(path).resolve().as_uri()
        self.events.clear()
        self.call("Page.navigate", {"url": url}, session)
        self.wait_event("Page.loadEventFired", session)
        page = Page(self, session, url)
        page.load_ms = page.evaluate("(() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd || n.duration; })()")
        for e in self.events:
            if e.get("sessionId") != session:
                continue
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                page.errors.append("console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                page.errors.append("exception: " + p["exceptionDetails"].get("text", ""))
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                page.errors.append("log: " + p["entry"].get("text", ""))
            elif m == "Network.requestWillBeSent":
                page.requests.append(p["request"]["url"])
        return page
