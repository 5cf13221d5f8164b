"""A real, throwaway NetBox on loopback for the tests: PyPI's ``netbox`` on PostgreSQL and Redis.

NetBox needs Python >= 3.12, so it lives in its own virtual environment under a cache folder outside
the repository (``~/.cache/twin-netbox``, or ``$TWIN_NETBOX_CACHE``), made once with pip. Each test
session then starts, on free loopback ports and under one temporary folder:

- a PostgreSQL cluster of its own (``initdb``; as the ``postgres`` user when run as root, which
  PostgreSQL refuses to run as), no fsync: it is thrown away;
- ``redis-server`` (no persistence);
- NetBox's ``configuration.py`` (``NETBOX_ROOT/conf``), the database schema, and ``runserver``.

NetBox's migrations take about 5 minutes on 2 cores, so the migrated database is kept as a
``pg_dump`` keyed by the NetBox and PostgreSQL versions, and later sessions restore it in seconds.
A superuser with a v2 API token and a password (for the bulk-import pages) is created per session.
Everything started is stopped by its own pid, and the folder removed, when the session ends.

Example::

    with NetBoxServer() as nb:
        requests.get(nb.url + "/api/status/", headers=nb.headers)
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NETBOX_VERSION = "4.7.3"
CACHE = Path(os.environ.get("TWIN_NETBOX_CACHE", Path.home() / ".cache" / "twin-netbox"))
VENV = CACHE / f"venv-{NETBOX_VERSION}"
DUMPS = CACHE / "dumps"
USER = "twin-admin"


def python312() -> str | None:
    """A Python >= 3.12 to make NetBox's environment with (pyenv's, or one on PATH)."""
    explicit = os.environ.get("TWIN_NETBOX_PYTHON")
    if explicit:
        return explicit
    roots = [Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")), Path("/root/.pyenv")]
    found = []
    for root in roots:
        for p in glob.glob(str(root / "versions" / "3.1[2-9]*" / "bin" / "python")):
            found.append(p)
    if found:
        return sorted(found, key=lambda p: [int(x) for x in Path(p).parents[1].name.split(".")[:2]])[0]
    for name in ("python3.12", "python3.13", "python3.14"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def pg_bin() -> Path | None:
    """The newest PostgreSQL server binaries of Debian's packages."""
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(dirs[-1]).parent if dirs else None


def why_not() -> str | None:
    """Why a NetBox cannot be started here, or None."""
    if python312() is None:
        return "no Python >= 3.12 for NetBox (pyenv's 3.12 or python3.12 on PATH)"
    if pg_bin() is None:
        return "PostgreSQL server not installed (Debian package postgresql)"
    if not shutil.which("redis-server"):
        return "redis-server not installed (Debian package redis-server)"
    if os.geteuid() == 0 and not shutil.which("runuser"):
        return "running as root without runuser to start PostgreSQL as the postgres user"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _locked(path: Path):
    """One installer or dumper at a time across parallel test sessions on this machine."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_venv(log=print) -> Path:
    """NetBox's environment (pip install of ``netbox==NETBOX_VERSION``), made once; its python."""
    py = VENV / "bin" / "python"
    with _locked(CACHE / "venv.lock"):
        if (VENV / ".complete").is_file():
            return py
        shutil.rmtree(VENV, ignore_errors=True)
        log(f"creating NetBox {NETBOX_VERSION} environment in {VENV} (about 2 minutes, once)")
        subprocess.run([python312(), "-m", "venv", str(VENV)], check=True, capture_output=True, timeout=300)
        p = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", f"netbox=={NETBOX_VERSION}"],
                           capture_output=True, text=True, timeout=1800)
        if p.returncode != 0:
            raise RuntimeError(f"pip install netbox=={NETBOX_VERSION} failed: {p.stderr[-2000:]}")
        (VENV / ".complete").write_text(NETBOX_VERSION + "\n")
    return py


def package_dir() -> Path:
    """site-packages of NetBox's environment (dcim/, extras/, netbox/ are top-level packages there)."""
    return Path(glob.glob(str(VENV / "lib" / "python3.*" / "site-packages"))[0])


class NetBoxServer:
    """PostgreSQL + Redis + NetBox runserver on loopback, owned by this object."""

    def __init__(self, log=lambda m: print(m, file=sys.stderr)) -> None:
        self.log = log
        self.work = Path(tempfile.mkdtemp(prefix="twin-netbox-"))
        self.procs: list[subprocess.Popen] = []
        self.pg_started = False
        self.url = ""
        self.token = ""
        self.password = secrets.token_hex(12)
        self.timings: dict[str, float] = {}

    # ------------------------------------------------------------------ helpers
    def _as_pg(self, cmd: list[str], **kw) -> subprocess.CompletedProcess:
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        return subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 600), **kw)

    def _env(self) -> dict:
        return {**os.environ, "NETBOX_ROOT": str(self.work / "root"), "PYTHONDONTWRITEBYTECODE": "1"}

    def netbox(self, *args: str, timeout: float = 900, input: str | None = None) -> subprocess.CompletedProcess:
        p = subprocess.run([str(VENV / "bin" / "netbox"), *args], env=self._env(), capture_output=True, text=True,
                           timeout=timeout, input=input)
        if p.returncode != 0:
            raise RuntimeError(f"netbox {' '.join(args)} failed: {p.stderr[-3000:]}")
        return p

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "NetBoxServer":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        t0 = time.monotonic()
        ensure_venv(self.log)
        self.timings["venv_s"] = time.monotonic() - t0
        pg = pg_bin()
        self.pg_port, self.redis_port, self.http_port = free_port(), free_port(), free_port()
        data = self.work / "pg"
        data.mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.work, "postgres")
            shutil.chown(data, "postgres")
        p = self._as_pg([str(pg / "initdb"), "-D", str(data / "data"), "-U", "netbox", "--auth=trust", "-E", "UTF8",
                         "--locale=C.UTF-8"])
        if p.returncode != 0:
            raise RuntimeError(f"initdb failed: {p.stderr}")
        opts = (f"-p {self.pg_port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=300"
                " -c full_page_writes=off")
        p = self._as_pg([str(pg / "pg_ctl"), "-D", str(data / "data"), "-l", str(data / "log"), "-o", opts, "-w", "start"])
        if p.returncode != 0:
            raise RuntimeError(f"PostgreSQL did not start: {p.stderr} {(data / 'log').read_text() if (data / 'log').exists() else ''}")
        self.pg_started = True
        self.procs.append(subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.work)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        self._configure()
        t1 = time.monotonic()
        self._database(pg)
        self.timings["database_s"] = time.monotonic() - t1
        self.password_user()
        log = open(self.work / "runserver.log", "w")
        self.procs.append(subprocess.Popen(
            [str(VENV / "bin" / "netbox"), "runserver", f"127.0.0.1:{self.http_port}", "--noreload", "--insecure"],
            env=self._env(), stdout=log, stderr=subprocess.STDOUT))
        self.url = f"http://127.0.0.1:{self.http_port}"
        self._wait_http()
        self.timings["total_s"] = time.monotonic() - t0

    def _configure(self) -> None:
        conf = self.work / "root" / "conf"
        conf.mkdir(parents=True)
        (self.work / "root" / "media").mkdir()
        redis = {"HOST": "127.0.0.1", "PORT": self.redis_port, "SSL": False}
        (conf / "configuration.py").write_text(
            "ALLOWED_HOSTS = ['127.0.0.1', 'localhost']\n"
            f"DATABASES = {{'default': {{'ENGINE': 'django.db.backends.postgresql', 'NAME': 'netbox', 'USER': 'netbox',"
            f" 'PASSWORD': '', 'HOST': {str(self.work / 'pg')!r}, 'PORT': '{self.pg_port}', 'CONN_MAX_AGE': 0}}}}\n"
            f"REDIS = {{'tasks': {{**{redis!r}, 'DATABASE': 0}}, 'caching': {{**{redis!r}, 'DATABASE': 1}}}}\n"
            f"SECRET_KEY = {secrets.token_urlsafe(60)!r}\n"
            f"API_TOKEN_PEPPERS = {{1: {secrets.token_urlsafe(60)!r}}}\n"
            "CENSUS_REPORTING_ENABLED = False\n"
            "RELEASE_CHECK_URL = None\n"
            "DATA_UPLOAD_MAX_MEMORY_SIZE = 50 * 2**20\n"
        )

    def _database(self, pg: Path) -> None:
        """Create the schema: restore the cached migrated dump, or migrate and keep a dump."""
        major = pg.parent.name
        dump = DUMPS / f"netbox-{NETBOX_VERSION}-pg{major}.dump"
        conn = ["-h", "127.0.0.1", "-p", str(self.pg_port), "-U", "netbox"]
        p = subprocess.run([str(pg / "createdb"), *conn, "netbox"], capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise RuntimeError(f"createdb failed: {p.stderr}")
        if dump.is_file():
            p = subprocess.run([str(pg / "pg_restore"), *conn, "-d", "netbox", "--no-owner", str(dump)],
                               capture_output=True, text=True, timeout=300)
            if p.returncode == 0:
                self.timings["restored"] = 1
                return
            self.log(f"restoring {dump} failed ({p.stderr.strip()[:200]}); migrating instead")
            subprocess.run([str(pg / "dropdb"), *conn, "netbox"], capture_output=True, timeout=60)
            subprocess.run([str(pg / "createdb"), *conn, "netbox"], capture_output=True, timeout=60, check=True)
        self.log(f"migrating a new NetBox {NETBOX_VERSION} database (about 5 minutes; dumped for later sessions)")
        self.netbox("migrate", "--no-input", timeout=1800)
        DUMPS.mkdir(parents=True, exist_ok=True)
        with _locked(CACHE / "dump.lock"):
            tmp = dump.with_suffix(f".tmp{os.getpid()}")
            p = subprocess.run([str(pg / "pg_dump"), *conn, "-Fc", "-f", str(tmp), "netbox"], capture_output=True,
                               text=True, timeout=600)
            if p.returncode == 0:
                os.replace(tmp, dump)
            else:
                tmp.unlink(missing_ok=True)

    def password_user(self) -> None:
        """A superuser with a password (bulk-import pages) and a v2 API token (REST, pynetbox)."""
        script = (
            "from users.constants import TOKEN_PREFIX\n"
            "from users.models import Token, User\n"
            f"u = User.objects.create_superuser({USER!r}, 'twin@example.invalid', {self.password!r})\n"
            f"t = Token(user=u, version=2, write_enabled=True, token={secrets.token_hex(20)!r})\n"
            "t.save()\n"
            "print(t.get_auth_header_prefix().split()[1] + t.token)\n"
        )
        self.token = self.netbox("nbshell", "--command", script, timeout=300).stdout.strip().splitlines()[-1]

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}

    # ------------------------------------------------------------------ clients
    def session(self):
        """A logged-in browser session (requests) for NetBox's bulk-import pages."""
        import requests

        s = requests.Session()
        s.get(self.url + "/login/", timeout=60)
        r = s.post(self.url + "/login/", data={"csrfmiddlewaretoken": s.cookies["csrftoken"], "username": USER,
                                               "password": self.password, "next": "/"}, timeout=60, allow_redirects=False)
        if r.status_code != 302:
            raise RuntimeError(f"login refused ({r.status_code})")
        return s

    def bulk_import(self, session, path: str, csv_text: str) -> tuple[bool, list[str]]:
        """POST one CSV to a bulk-import page as a user would; (accepted, NetBox's error messages).

        NetBox imports a file in one transaction: it redirects to the object list when every row was
        saved, and shows the form again with "Record N field: message" errors when any row was refused.
        """
        import html
        import re

        r = session.post(self.url + path, data={
            "csrfmiddlewaretoken": session.cookies["csrftoken"], "import_method": "direct", "data": csv_text,
            "format": "csv", "csv_delimiter": ",",
        }, timeout=1800, allow_redirects=False)
        if r.status_code == 302 and "modified_by_request" in r.headers.get("Location", ""):
            return True, []
        text = html.unescape(re.sub(r"<[^>]+>", " ", r.text))
        errors = sorted({m.strip() for m in re.findall(r"(Record \d+[^\n]*)", text)})
        return False, errors or [f"HTTP {r.status_code}: {' '.join(text.split())[:500]}"]

    def api_all(self, path: str, **params) -> list[dict]:
        """Every object of one REST list (all pages)."""
        import requests

        out, url = [], self.url + path
        params = {"limit": 1000, **params}
        while url:
            r = requests.get(url, headers=self.headers, params=params, timeout=300)
            r.raise_for_status()
            js = r.json()
            out += js["results"]
            url, params = js.get("next"), None
        return out

    def _wait_http(self, timeout: float = 120) -> None:
        import urllib.request

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.procs):
                break
            try:
                req = urllib.request.Request(self.url + "/api/status/", headers=self.headers)
                with urllib.request.urlopen(req, timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"NetBox did not answer at {self.url}: {(self.work / 'runserver.log').read_text()[-3000:]}")

    def cpu_seconds(self) -> float:
        """CPU time NetBox's runserver has used so far (user + system), for the README's cost figures."""
        for p in self.procs:
            if p.args[0].endswith("netbox") and p.poll() is None:
                fields = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return 0.0

    def close(self) -> None:
        if self.procs:
            self.timings["netbox_cpu_s"] = self.cpu_seconds()
            with contextlib.suppress(OSError):
                (CACHE / "last-session.json").write_text(json.dumps(self.timings, indent=1, sort_keys=True) + "\n")
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=10)
        self.procs = []
        if self.pg_started:
            pg = pg_bin()
            self._as_pg([str(pg / "pg_ctl"), "-D", str(self.work / "pg" / "data"), "-m", "fast", "-w", "stop"], timeout=60)
            self.pg_started = False
        shutil.rmtree(self.work, ignore_errors=True)
