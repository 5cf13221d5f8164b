"""Where ``twin netbox push`` gets its address and token, and what of them may ever be printed.

The token comes from ``$TWIN_NETBOX_TOKEN`` (or ``$NETBOX_TOKEN``) or a file given with ``--token-file``,
never the command line (every user of the machine can read another's command lines in ``ps``). No
message shows the token or a password in the URL: the URL is shown with ``***`` for the password, and
any text a server sends back is cut to one printable line with the token, its parts and the password
replaced by ``***`` (a server that echoes the request would otherwise print them).
"""

from __future__ import annotations

import base64
import os
import re
import stat
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from twin.folder import printable

TOKEN_ENV = ("TWIN_NETBOX_TOKEN", "NETBOX_TOKEN")
TOKEN = re.compile(r"[\x21-\x7e]{8,512}")  # printable ASCII without blanks: it goes into an HTTP header


class PushError(RuntimeError):
    """A push that could not start or finish; the message says what, if anything, was written."""


def shown_url(url: str) -> str:
    """``url`` as it may be printed: a password in it replaced by ``***``.

    >>> shown_url("https://admin:s3cret@nb.example:8443/x"), shown_url("http://127.0.0.1:8000")
    ('https://admin:***@nb.example:8443/x', 'http://127.0.0.1:8000')
    """
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))
    except ValueError:
        return "(an address twin cannot read)"


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a NetBox address, or None.

    >>> url_problem("ftp://nb"), url_problem("http://127.0.0.1:8000")
    ("--url 'ftp://nb': expected http://HOST[:PORT] or https://HOST[:PORT], the address of NetBox", None)
    """
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and url.isprintable() and " " not in url
        parts.port  # noqa: B018 (raises ValueError on a port that is not a number)
    except ValueError:
        ok = False
    if not ok:
        return f"--url {printable(repr(shown_url(url)), 200)}: expected http://HOST[:PORT] or https://HOST[:PORT], the address of NetBox"
    if parts.username is not None or parts.password is not None:
        return (f"--url {printable(repr(shown_url(url)), 200)}: a user or password in the address is not for NetBox's API (it takes the "
                "token; HTTP clients would send the password instead of the token) and is visible in ps: drop it")
    return None


def load_token(token_file: str | Path | None = None, env: dict | None = None) -> tuple[str, list[str]]:
    """(token, warnings) from ``token_file`` or, without one, ``$TWIN_NETBOX_TOKEN`` (or
    ``$NETBOX_TOKEN``); PushError naming the source (never the value) when there is none or it is not a
    token. A token file others can read is a warning."""
    env = os.environ if env is None else env
    warnings: list[str] = []
    if token_file is not None:
        path = Path(token_file)
        try:
            st = path.stat()
            if not stat.S_ISREG(st.st_mode):
                raise PushError(f"--token-file {path}: not a regular file")
            if st.st_size > 4096:
                raise PushError(f"--token-file {path}: {st.st_size:,} bytes; expected one line holding the token")
            raw = path.read_bytes()
        except OSError as e:
            raise PushError(f"--token-file {path}: cannot read it ({e.strerror})") from None
        if st.st_mode & 0o077:
            warnings.append(f"--token-file {path} can be read by other users (mode {stat.S_IMODE(st.st_mode):o}); chmod 600 it")
        try:
            lines = raw.decode("ascii").strip().splitlines()
        except UnicodeDecodeError:
            raise PushError(f"--token-file {path}: not ASCII; expected one line holding the token") from None
        token, source = (lines[0].strip() if len(lines) == 1 else ""), f"--token-file {path}"
        if len(lines) != 1:
            raise PushError(f"{source}: expected one line holding the token, found {len(lines)}")
    else:
        name = next((n for n in TOKEN_ENV if env.get(n)), None)
        if name is None:
            raise PushError(f"no NetBox token: set ${TOKEN_ENV[0]} or give --token-file FILE (never on the command line, where "
                            "every user of the machine can read it)")
        token, source = env[name].strip(), f"${name}"
    if not TOKEN.fullmatch(token):
        raise PushError(f"{source}: not a NetBox API token (expected 8 to 512 printable characters without blanks)")
    return token, warnings


def redact(text: str, token: str, url: str) -> str:
    """``text`` as one printable line without ``token`` (nor its key and secret parts) or the password of ``url``.

    >>> redact("bad token nbt_abcdef123.0123456789abcdef\\nagain 0123456789abcdef", "nbt_abcdef123.0123456789abcdef", "http://u:pw123@h")
    'bad token *** again ***'
    """
    secrets = {token, *(p for p in re.split(r"[._]", token.removeprefix("nbt_")) if len(p) >= 6)}
    try:
        parts = urlsplit(url)
        if parts.password:  # and as HTTP basic authentication sends it
            secrets |= {parts.password, base64.b64encode(f"{parts.username or ''}:{parts.password}".encode()).decode()}
    except ValueError:
        pass
    for x in sorted((x for x in secrets if x), key=len, reverse=True):
        text = text.replace(x, "***")
    return printable(" ".join(text.split()), 2000)


def why_unreachable(e: Exception) -> str:
    """A connection failure in a few words (requests' own text nests three exceptions deep)."""
    text = str(e)
    for needle, short in (("Connection refused", "connection refused"), ("Name or service not known", "unknown host"),
                          ("Failed to resolve", "unknown host"), ("No route to host", "no route to host"),
                          ("timed out", "no answer within 30 s"), ("SSL", "TLS handshake failed")):
        if needle in text:
            return short
    return f"{type(e).__name__}: {text[:200]}"
