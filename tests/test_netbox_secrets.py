"""`twin netbox push` keeps secrets secret and reads any answer (issue 25), against real HTTP servers on
loopback that misbehave the ways the battery found: one that echoes the request (token and all) in its
errors, one that is not NetBox (HTML, a JSON list), one whose lists are not JSON or not NetBox-shaped.

Known answers: the token never appears in anything twin prints, nor the URL's password; every failure
is one line (exit 2 from the CLI); the token comes from $TWIN_NETBOX_TOKEN or --token-file, and
`--token` on the command line is refused without echoing it.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import ROOT, SITES, compiled, unwrap

from twin.netbox.access import load_token, redact, shown_url
from twin.netbox.push import Pusher, PushError

TOKEN = "nbt_k3yk3yk3y.5ecret5ecret5ecret5ecret5ecret5ecret5ecr"
PASSWORD = "pa55w0rdXYZ"
STATUS = {"netbox-version": "4.2.0", "python-version": "3.12"}
EMPTY = {"count": 0, "next": None, "previous": None, "results": []}


class Fake(BaseHTTPRequestHandler):
    """One behaviour per server (``self.server.mode``); every request is answered from here."""

    def log_message(self, *a):
        pass

    def send(self, code: int, body, ctype: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def answer(self) -> None:
        mode, auth = self.server.mode, self.headers.get("Authorization", "")
        length = int(self.headers.get("Content-Length") or 0)
        sent = self.rfile.read(length).decode(errors="replace") if length else ""
        status = self.path.startswith("/api/status/")
        if mode == "echo-401":
            self.send(401, {"detail": f"Invalid token in header {auth!r} for {self.path}"})
        elif mode == "html":
            self.send(200, b"<html><body>netbox-version? no, a web page</body></html>", "text/html")
        elif mode == "status-list":
            self.send(200, [STATUS])
        elif status:
            self.send(200, STATUS)
        elif mode == "lists-not-json":
            self.send(200, b"Service temporarily unavailable\n\x1b[31mred\x1b[0m", "text/plain")
        elif mode == "lists-wrong-shape":
            self.send(200, {"count": 1, "next": None, "previous": None, "results": [{"no": "id", "name": 7}]})
        elif mode == "echo-write":
            if self.command == "GET":
                self.send(200, EMPTY)
            else:
                self.send(400, {"error": f"refused: you sent {auth} with {sent[:100]}", "token": TOKEN.split(".")[1]})

    do_GET = do_POST = do_PATCH = do_DELETE = answer


@pytest.fixture
def server():
    servers = []

    def start(mode: str) -> str:
        srv = ThreadingHTTPServer(("127.0.0.1", 0), Fake)
        srv.mode = mode
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}"

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


@pytest.mark.parametrize("mode, says", [
    ("echo-401", "refused the token (HTTP 401"),
    ("html", "(not JSON) but is not a NetBox API"),
    ("status-list", "(JSON without netbox-version) but is not a NetBox API"),
    ("lists-not-json", "gave an answer twin cannot read (ContentError"),
    ("lists-wrong-shape", "gave an answer twin cannot read (AttributeError: object has no attribute \"id\")"),
    ("echo-write", "refused a write (400"),
])
def test_every_bad_answer_is_one_line_without_secrets(server, mode, says):
    url = server(mode)
    with pytest.raises(PushError) as e:
        Pusher(compiled("lab-2zone"), url, TOKEN).run()
    msg = str(e.value)
    assert says in msg, msg
    assert "\n" not in msg and "\x1b" not in msg and len(msg) < 2500
    for secret in (TOKEN, TOKEN.split(".")[1], "k3yk3yk3y"):
        assert secret not in msg, (secret, msg)
    assert url in msg


def test_a_password_in_the_url_is_refused_unsent_and_unshown(server):
    """requests would send an address's user:password as HTTP basic authentication in place of the token
    (an echoing server printed it, base64-encoded): such an address is refused before any request."""
    url = server("echo-401").replace("http://", f"http://admin:{PASSWORD}@")
    with pytest.raises(PushError) as e:
        Pusher(compiled("lab-2zone"), url, TOKEN).run()
    assert "a user or password in the address is not for NetBox's API" in str(e.value)
    assert PASSWORD not in str(e.value) and "admin:***@127.0.0.1" in str(e.value)
    basic = base64.b64encode(f"admin:{PASSWORD}".encode()).decode()
    assert redact(f"header Basic {basic}", TOKEN, url) == "header Basic ***"


def test_redaction_and_shown_url():
    assert redact(f"a {TOKEN} b\n{TOKEN.split('.')[1]}", TOKEN, "http://h") == "a *** b ***"
    assert redact(f"pw={PASSWORD}", TOKEN, f"http://u:{PASSWORD}@h") == "pw=***"
    assert shown_url(f"https://u:{PASSWORD}@nb:8443/") == "https://u:***@nb:8443/"


def test_token_sources(tmp_path):
    """The file wins over the environment; $TWIN_NETBOX_TOKEN over $NETBOX_TOKEN; a file others can read
    is a warning; nothing, two lines or blanks are refused naming the source, never the value."""
    f = tmp_path / "token"
    f.write_text(TOKEN + "\n")
    f.chmod(0o600)
    assert load_token(f, {"TWIN_NETBOX_TOKEN": "nbt_other.value12345"}) == (TOKEN, [])
    assert load_token(None, {"TWIN_NETBOX_TOKEN": TOKEN, "NETBOX_TOKEN": "nbt_older.value12345"}) == (TOKEN, [])
    assert load_token(None, {"NETBOX_TOKEN": TOKEN}) == (TOKEN, [])
    f.chmod(0o644)
    assert "can be read by other users (mode 644)" in load_token(f, {})[1][0]
    for body, why in ((f"{TOKEN}\n{TOKEN}\n", "expected one line"), ("with blank inside", "not a NetBox API token"), ("", "found 0")):
        f.write_text(body)
        with pytest.raises(PushError, match=why) as e:
            load_token(f, {})
        assert TOKEN not in str(e.value) and "blank inside" not in str(e.value)
    with pytest.raises(PushError, match=r"set \$TWIN_NETBOX_TOKEN or give --token-file"):
        load_token(None, {})


def twin_cli(*args, env=None):
    env = {**{k: v for k, v in os.environ.items() if "NETBOX" not in k}, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "twin", *map(str, args)], cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)


def test_cli_takes_the_token_from_env_or_file_never_argv(server, tmp_path):
    """--token is refused without its value in the output; the token from the environment reaches the server
    (an echoing server proves it) and is not printed; --token-file works the same; --json says the same."""
    r = twin_cli("netbox", "push", SITES / "lab-2zone.yaml", "--url", "http://127.0.0.1:9", "--token", TOKEN)
    assert r.returncode == 2 and "visible to every user" in r.stderr and TOKEN not in r.stdout + r.stderr
    url = server("echo-401")
    r = twin_cli("netbox", "push", SITES / "lab-2zone.yaml", "--url", url, env={"TWIN_NETBOX_TOKEN": TOKEN})
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "refused the token (HTTP 401: Invalid token in header 'Bearer ***'" in r.stderr  # the server got it and echoed it
    assert all(s not in r.stdout + r.stderr for s in (TOKEN, "k3yk3yk3y"))
    f = tmp_path / "tok"
    f.write_text(TOKEN)
    f.chmod(0o600)
    r = twin_cli("netbox", "push", SITES / "lab-2zone.yaml", "--url", url, "--token-file", f, "--json")
    js = unwrap(r.stdout)
    assert r.returncode == 2 and js["status"] == "error" and "refused the token" in js["error"]
    assert js["url"] == url and TOKEN not in r.stdout + r.stderr


def test_no_token_is_one_line():
    r = twin_cli("netbox", "push", SITES / "lab-2zone.yaml", "--url", "http://127.0.0.1:9")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"{SITES / 'lab-2zone.yaml'}: no NetBox token: set $TWIN_NETBOX_TOKEN or give --token-file FILE (never on the command "
        "line, where every user of the machine can read it)"]

