"""What a verify run may leave behind if it dies, and who removes it.

A run writes a state file before it creates anything (``/run/twin-verify/<prefix>.json`` as root,
``$XDG_RUNTIME_DIR/twin-verify`` or ``/tmp/twin-verify-<uid>`` otherwise): its pid and start time, the
prefix of its network namespaces, its work folders (every process it starts has one of them on its
command line) and the kernel-wide sysctls it raised. Three things remove what a dead run left:

- its **watchdog**, a small process started with the run in its own session, that waits for the run's
  pipe to close; when the run dies by any signal (SIGKILL and the OOM killer included) it kills the
  run's processes, deletes its namespaces and work folders and restores the sysctls within a second;
- the **next run**, which first reaps every run whose owner is gone (a watchdog killed with it);
- ``twin verify --cleanup``, which does the same on demand.

A run is dead when no process has its pid and start time (a recycled pid is not mistaken for it).

**Sysctls** are one value for the whole kernel, shared by concurrent runs: the first run that raises
one records the value it found (the baseline, ``sysctl.json``); each run records the value it needs;
when a run ends or is reaped the value becomes the largest still needed by a live run, or the
baseline when none is left. So a run never lowers a table under another run's feet, and the last one
out restores what the machine had.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

IP = "ip"


def state_dir() -> Path:
    """Where run state files live; created 0700 and owned by the caller (refused otherwise)."""
    if override := os.environ.get("TWIN_VERIFY_STATE"):
        d = Path(override)
    elif os.geteuid() == 0:
        d = Path("/run/twin-verify")
    elif os.environ.get("XDG_RUNTIME_DIR"):
        d = Path(os.environ["XDG_RUNTIME_DIR"]) / "twin-verify"
    else:
        d = Path(tempfile.gettempdir()) / f"twin-verify-{os.geteuid()}"
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = d.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise RuntimeError(f"{d} is not a private folder of this user (twin keeps verify run state there)")
    return d


def start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), None when no such process."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat_line.rsplit(")", 1)[1].split()[19]


def alive(pid: int, started: str) -> bool:
    return start_time(pid) == started


@contextmanager
def _locked(d: Path):
    with open(d / ".lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _write_json(path: Path, doc: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True))
    os.replace(tmp, path)


def _read_json(path: Path) -> dict | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


class Run:
    """This process's record; ``close()`` when everything it made is gone."""

    def __init__(self, prefix: str, netns: bool = True, watchdog: bool = True) -> None:
        self.dir = state_dir()
        self.prefix = prefix
        self.path = self.dir / f"{prefix}.json"
        self.doc = {"pid": os.getpid(), "start": start_time(os.getpid()), "prefix": prefix, "netns": netns,
                    "workdirs": [], "sysctls": {}, "watchdog": None}
        self._watchdog: subprocess.Popen | None = None
        self.save()
        if watchdog:
            self._watchdog = subprocess.Popen(
                [sys.executable, "-m", "twin.verify.runs", "--watch", str(self.path)], stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
            self.doc["watchdog"] = [self._watchdog.pid, None]
            self.save()

    def save(self) -> None:
        _write_json(self.path, self.doc)

    def add_workdir(self, path: Path) -> None:
        self.doc["workdirs"].append(str(path))
        self.save()

    def raise_sysctl(self, path: str, want: int) -> None:
        """At least ``want`` in ``path`` for as long as this run lives (see the module docstring)."""
        with _locked(self.dir):
            ledger = _read_json(self.dir / "sysctl.json") or {}
            now = int(Path(path).read_text().strip())
            ledger.setdefault(path, now)
            self.doc["sysctls"][path] = want
            self.save()
            _write_json(self.dir / "sysctl.json", ledger)
            if want > now:
                Path(path).write_text(str(want))

    def close(self) -> None:
        """Give back the sysctls and drop the record; the watchdog then exits."""
        release_sysctls(self.dir, self.path)
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        if self._watchdog is not None:
            self._watchdog.stdin.close()
            try:
                self._watchdog.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._watchdog.kill()
            self._watchdog = None


def release_sysctls(d: Path, run_file: Path) -> dict[str, int]:
    """Take the run of ``run_file`` out of the sysctl ledger and set each sysctl it raised to the
    largest value a live run still needs, or the baseline. Returns {path: value written}."""
    written: dict[str, int] = {}
    with _locked(d):
        mine = (_read_json(run_file) or {}).get("sysctls", {})
        if not mine:
            return written
        ledger = _read_json(d / "sysctl.json") or {}
        need: dict[str, int] = {}
        for f in d.glob("*.json"):
            doc = _read_json(f)
            if f == run_file or f.name == "sysctl.json" or not doc or not alive(doc.get("pid", -1), doc.get("start")):
                continue
            for p, v in doc.get("sysctls", {}).items():
                need[p] = max(need.get(p, 0), int(v))
        for p in mine:
            if p not in ledger:
                continue
            value = max(int(ledger[p]), need.get(p, 0))
            try:
                Path(p).write_text(str(value))
                written[p] = value
            except OSError:
                pass
            if p not in need:
                del ledger[p]
        doc = _read_json(run_file)
        if doc is not None:
            doc["sysctls"] = {}
            _write_json(run_file, doc)
        _write_json(d / "sysctl.json", ledger)
    return written


# ------------------------------------------------------------------ reaping
def processes_with(markers: list[str]) -> list[int]:
    """Pids whose command line names one of ``markers`` (a run's work folders)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(m and m in cmd for m in markers):
            found.append(int(entry.name))
    return found


def namespaces_of(prefix: str) -> list[str]:
    out = subprocess.run([IP, "netns", "list"], capture_output=True, text=True, timeout=60).stdout
    return [line.split()[0] for line in out.splitlines() if line.split() and line.split()[0].startswith(prefix + "-")]


def _is_workdir(path: str, prefix: str) -> bool:
    """A folder a run of ``prefix`` made: an absolute path named after the prefix, not a symlink."""
    p = Path(path)
    return bool(prefix) and p.is_absolute() and p.name.startswith(prefix + "-") and not p.is_symlink()


def reap(run_file: Path) -> dict:
    """Remove everything the (dead) run of ``run_file`` left: processes, namespaces, work folders,
    raised sysctls, then the record. Returns what it removed."""
    doc = _read_json(run_file) or {}
    prefix = str(doc.get("prefix", ""))
    workdirs = [w for w in doc.get("workdirs", []) if isinstance(w, str) and _is_workdir(w, prefix)]
    done = {"run": prefix, "processes": 0, "namespaces": 0, "workdirs": 0, "sysctls": {}}
    nss = namespaces_of(prefix) if prefix and doc.get("netns") and os.geteuid() == 0 else []
    pids = set(processes_with(workdirs))
    for ns in nss:
        p = subprocess.run([IP, "netns", "pids", ns], capture_output=True, text=True, timeout=60)
        pids |= {int(x) for x in p.stdout.split() if x.isdigit()}
    for pid in sorted(pids):
        try:
            os.kill(pid, signal.SIGKILL)
            done["processes"] += 1
        except ProcessLookupError:
            pass
    end = time.monotonic() + 10
    while pids and time.monotonic() < end and any(Path(f"/proc/{p}").exists() and _state(p) != "Z" for p in pids):
        time.sleep(0.05)
    for ns in nss:
        if subprocess.run([IP, "netns", "del", ns], capture_output=True, timeout=60).returncode == 0:
            done["namespaces"] += 1
    for w in workdirs:
        if Path(w).exists():
            shutil.rmtree(w, ignore_errors=True)
            done["workdirs"] += 1
    done["sysctls"] = release_sysctls(run_file.parent, run_file)
    try:
        run_file.unlink()
    except FileNotFoundError:
        pass
    return done


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "X"


def dead_runs(d: Path | None = None) -> list[Path]:
    """State files of runs whose owner is gone."""
    d = d or state_dir()
    out = []
    for f in sorted(d.glob("*.json")):
        if f.name == "sysctl.json":
            continue
        doc = _read_json(f)
        if doc is None or not alive(doc.get("pid", -1), doc.get("start")):
            out.append(f)
    return out


def reap_dead() -> list[dict]:
    """Reap every run whose owner is gone (the next run does this first; so does ``--cleanup``)."""
    return [reap(f) for f in dead_runs()]


def watch(run_file: Path) -> None:
    """The watchdog: block until the run's pipe closes, wait for the run to be gone, reap what is left.
    A run that ended cleanly (:meth:`Run.close`) removed its record before closing the pipe: then there is
    nothing to reap and the watchdog exits at once (waiting for its run, which waits for it, cost every
    verify 10 s)."""
    doc = _read_json(run_file) or {}
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the run's terminal is the run's, not ours
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while sys.stdin.buffer.read(65536):
        pass
    if not run_file.exists():
        return
    end = time.monotonic() + 60
    while alive(doc.get("pid", -1), doc.get("start")) and time.monotonic() < end:
        time.sleep(0.1)
    if run_file.exists() and not alive(doc.get("pid", -1), doc.get("start")):
        reap(run_file)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--watch":
        watch(Path(sys.argv[2]))
