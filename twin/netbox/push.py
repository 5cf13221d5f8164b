"""``twin netbox push``: write a design into a running NetBox through its REST API (pynetbox), idempotently.

The objects are those of the bulk-import set (:func:`twin.emit.netbox_objects.import_set`), so a push and a
file import make the same NetBox. Each object is found by its natural key (a site, rack or device by
name, an interface by device and name, a cable by its two ends) and

- created when NetBox lacks it, updated (only the fields that differ) when it differs, left alone
  when equal: a second push of the same design changes nothing;
- deleted only when it carries the tag ``twin``, belongs to this site and is no longer in the
  design: objects twin did not create are never changed or deleted. Catalog objects (manufacturers,
  device types, roles, the tag) are shared by every site and never deleted; one a person made is
  used as it is.

Everything is read and checked before the first write: an unreachable URL, a refused token, a name
over NetBox's limit, or a site object twin did not create standing where the design needs one
raise :class:`PushError` with nothing written. A refusal in the middle of the writes raises
:class:`PushError` naming what had been written by then; pushing again resumes.

Order: stale cables, interfaces and devices go first (they free ports and rack units), then
everything is created or updated in import order, then stale racks and locations go.

Secrets stay secret: the token comes from ``$TWIN_NETBOX_TOKEN`` or a file (:func:`load_token`), never
the command line; no message shows it or a password in the URL (:func:`shown_url`), and a server's
own error text is cut to one line with the token and the password blanked out (:meth:`Pusher.redact`).
An answer that is not JSON or not shaped like NetBox's is one line, like every other failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from twin.compiler.design import Design
from twin.emit.netbox_objects import NAME_MAX, TAG, Table, import_set, long_names
from twin.folder import printable
from twin.netbox.access import PushError, load_token, redact, shown_url, url_problem, why_unreachable

__all__ = ["PushError", "PushResult", "Pusher", "load_token", "push", "url_problem"]

# (pynetbox app, endpoint) per NetBox model; which column names the object (its key); which columns
# refer to another model's object (resolved to ids); how the other columns are typed in the API.
ENDPOINTS = {
    "extras.tag": ("extras", "tags"), "dcim.site": ("dcim", "sites"), "dcim.location": ("dcim", "locations"),
    "dcim.rack": ("dcim", "racks"), "dcim.manufacturer": ("dcim", "manufacturers"),
    "dcim.devicetype": ("dcim", "device_types"), "dcim.devicerole": ("dcim", "device_roles"),
    "dcim.device": ("dcim", "devices"), "dcim.interface": ("dcim", "interfaces"), "dcim.cable": ("dcim", "cables"),
}
REFS = {  # column -> model it names (by that model's key)
    "site": "dcim.site", "parent": "dcim.location", "location": "dcim.location", "rack": "dcim.rack",
    "manufacturer": "dcim.manufacturer", "role": "dcim.devicerole", "device": "dcim.device",
}
INTS = {"width", "u_height", "speed"}
FLOATS = {"position", "weight", "length"}
BOOLS = {"is_full_depth", "enabled"}
SITE_SCOPED = ("dcim.location", "dcim.rack", "dcim.device", "dcim.interface", "dcim.cable")
EARLY_DELETE = ("dcim.cable", "dcim.interface", "dcim.device")
LATE_DELETE = ("dcim.rack", "dcim.location")
CHUNK = 500
ANSWER_CHARS = 300  # of a server's error text shown


@dataclass
class PushResult:
    site: str
    url: str
    created: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)
    unchanged: dict[str, int] = field(default_factory=dict)

    @property
    def changes(self) -> int:
        return sum(self.created.values()) + sum(self.updated.values()) + sum(self.deleted.values())

    def to_json(self) -> dict:
        return {"site": self.site, "url": self.url, "created": self.created, "updated": self.updated,
                "deleted": self.deleted, "unchanged": self.unchanged, "changes": self.changes}

    def written(self) -> str:
        parts = [f"{verb} {n} {m}" for verb, d in (("created", self.created), ("updated", self.updated),
                                                   ("deleted", self.deleted)) for m, n in sorted(d.items()) if n]
        return ", ".join(parts) or "nothing"


def key_of(model: str, rec: dict) -> tuple:
    """The natural key of a design record (CSV columns) of ``model``."""
    if model == "extras.tag":
        return (rec["slug"],)
    if model == "dcim.devicetype":
        return (rec["manufacturer"], rec["model"])
    if model == "dcim.interface":
        return (rec["device"], rec["name"])
    if model == "dcim.cable":
        return (rec["side_a_device"], rec["side_a_name"], rec["side_b_device"], rec["side_b_name"])
    return (rec["name"],)


def existing_key(model: str, obj: dict) -> tuple:
    """The natural key of an object as NetBox's REST API returns it."""
    if model == "extras.tag":
        return (obj["slug"],)
    if model == "dcim.devicetype":
        return (obj["manufacturer"]["name"], obj["model"])
    if model == "dcim.interface":
        return (obj["device"]["name"], obj["name"])
    if model == "dcim.cable":
        ends = []
        for side in ("a_terminations", "b_terminations"):
            t = obj[side][0]["object"] if obj.get(side) else {"device": {"name": ""}, "name": ""}
            ends += [t["device"]["name"], t["name"]]
        return tuple(ends)
    return (obj["name"],)


def _value(col: str, v: str):
    if col in INTS:
        return int(v)
    if col in FLOATS:
        return float(v)
    if col in BOOLS:
        return v == "true"
    return v


def _plain(v):
    """A REST value as comparable as a payload value: an object by its id, a choice by its value."""
    if isinstance(v, dict):
        return v["id"] if "id" in v else v.get("value")
    if isinstance(v, list):
        return sorted(_plain(x) for x in v)
    return v


class Pusher:
    """One push of one design; ``run`` does it, ``result`` counts it."""

    def __init__(self, design: Design, url: str, token: str, log: Callable[[str], None] = lambda _m: None):
        self.tables = import_set(design)
        self.site = design.name
        self.url, self.token, self.log = url.rstrip("/"), token, log
        self.shown = shown_url(self.url)  # the address in every message
        self.result = PushResult(self.site, self.shown)
        self.ids: dict[str, dict[tuple, int]] = {}  # model -> key -> id (existing or created)
        self.existing: dict[str, dict[tuple, dict]] = {}

    # ------------------------------------------------------------------ connection
    def connect(self):
        import pynetbox
        import requests

        if why := url_problem(self.url):
            raise PushError(why)
        nb = pynetbox.api(self.url, token=self.token)
        nb.http_session.timeout = 60
        try:
            r = nb.http_session.get(self.url + "/api/status/", headers={"Authorization": self._auth(), "Accept": "application/json"}, timeout=30)
        except requests.RequestException as e:
            raise PushError(f"NetBox at {self.shown} does not answer ({why_unreachable(e)}); nothing written") from None
        try:
            body = r.json()
        except ValueError:
            body = None
        if r.status_code in (401, 403):
            detail = body.get("detail", "") if isinstance(body, dict) and isinstance(body.get("detail"), str) else ""
            raise PushError(f"NetBox at {self.shown} refused the token (HTTP {r.status_code}{': ' + detail if detail else ''}); nothing written")
        if r.status_code != 200 or not isinstance(body, dict) or not isinstance(body.get("netbox-version"), str):
            what = "not JSON" if body is None else "JSON without netbox-version"
            raise PushError(f"{self.shown} answered HTTP {r.status_code} ({what}) but is not a NetBox API (no /api/status/); nothing written")
        self.version = body["netbox-version"]
        return nb

    def redact(self, text: str) -> str:
        """``text`` as one printable line without the token, its parts or the URL's password."""
        return redact(text, self.token, self.url)

    def _auth(self) -> str:
        return f"Bearer {self.token}" if self.token.startswith("nbt_") else f"Token {self.token}"

    def endpoint(self, nb, model: str):
        app, name = ENDPOINTS[model]
        return getattr(getattr(nb, app), name)

    # ------------------------------------------------------------------ reading
    def read(self, nb) -> None:
        """Everything this push may touch, keyed like the design's records."""
        site = next(iter(self.endpoint(nb, "dcim.site").filter(name=self.site)), None)
        site_id = site.id if site else None
        for t in self.tables:
            ep = self.endpoint(nb, t.model)
            if t.model in SITE_SCOPED:
                objs = list(ep.filter(site_id=site_id)) if site_id else []
            elif t.model == "dcim.site":
                objs = [site] if site else []
            elif t.model == "extras.tag":
                objs = list(ep.filter(slug=[r["slug"] for r in t.records()]))
            elif t.model == "dcim.devicetype":
                objs = list(ep.filter(model=sorted({r["model"] for r in t.records()})))
            else:
                objs = list(ep.filter(name=sorted({r["name"] for r in t.records()})))
            self.existing[t.model] = {existing_key(t.model, dict(o)): dict(o) for o in objs}
            self.ids[t.model] = {k: o["id"] for k, o in self.existing[t.model].items()}
        self.tag_id = self.ids["extras.tag"].get((TAG,))

    def twins(self, obj: dict) -> bool:
        return any(t.get("slug") == TAG for t in obj.get("tags", []))

    def check(self) -> None:
        """Refuse before writing: long names, and site objects twin did not create in the design's way."""
        problems = long_names(self.tables)
        for t in self.tables:
            if t.shared:
                continue
            for rec in t.records():
                obj = self.existing[t.model].get(key_of(t.model, rec))
                if obj is not None and not self.twins(obj):
                    problems.append(f"NetBox already has {t.model} {' '.join(key_of(t.model, rec))!r} without the tag "
                                    f"'{TAG}' (twin did not create it and will not change it)")
        if problems:
            more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
            raise PushError("; ".join(problems[:10]) + more + f"; names are limited to {NAME_MAX} characters; nothing written")

    # ------------------------------------------------------------------ writing
    def payload(self, t: Table, rec: dict) -> dict:
        out: dict = {}
        for col, v in rec.items():
            if col == "tags":
                out["tags"] = [self.tag_id]
            elif t.model == "dcim.cable":
                continue
            elif col == "manufacturer" and t.model == "dcim.device":
                continue  # the device type names its manufacturer
            elif col == "device_type":
                out[col] = self.ids["dcim.devicetype"][(rec["manufacturer"], v)]
            elif col in REFS:
                out[col] = self.ids[REFS[col]][(v,)] if v else None
            else:
                out[col] = _value(col, v)
        if t.model == "dcim.cable":
            a = self.ids["dcim.interface"][(rec["side_a_device"], rec["side_a_name"])]
            b = self.ids["dcim.interface"][(rec["side_b_device"], rec["side_b_name"])]
            out = {"a_terminations": [{"object_type": "dcim.interface", "object_id": a}],
                   "b_terminations": [{"object_type": "dcim.interface", "object_id": b}],
                   **{c: _value(c, rec[c]) for c in ("type", "status", "label", "length", "length_unit", "description")},
                   "tags": [self.tag_id]}
        return out

    def differs(self, payload: dict, obj: dict) -> dict:
        """The payload fields whose value NetBox does not have (terminations: a new cable instead)."""
        out = {}
        for k, v in payload.items():
            if k.endswith("_terminations"):
                continue
            have = _plain(obj.get(k))
            want = sorted(v) if isinstance(v, list) else v
            if isinstance(want, float) and have is not None:
                have = float(have)
            if have != want and not (want in ("", None) and have in ("", None)):
                out[k] = v
        return out

    def write(self, nb, t: Table, records: list[dict]) -> None:
        ep = self.endpoint(nb, t.model)
        new, changed, same = [], [], 0
        keys = []
        for rec in records:
            key = key_of(t.model, rec)
            obj = self.existing[t.model].get(key)
            if t.model == "extras.tag" and obj is None:
                new.append({c: rec[c] for c in t.columns})
                keys.append(key)
                continue
            if obj is not None and t.shared and not self.twins(obj):
                same += 1  # a person's catalog object: used as it is
                continue
            pl = self.payload(t, rec)
            if obj is None:
                new.append(pl)
                keys.append(key)
            elif diff := self.differs(pl, obj):
                changed.append({"id": obj["id"], **diff})
            else:
                same += 1
        for i in range(0, len(new), CHUNK):
            made = ep.create(new[i:i + CHUNK])
            for k, o in zip(keys[i:i + CHUNK], made):
                self.ids[t.model][k] = o.id
            self.result.created[t.model] = self.result.created.get(t.model, 0) + len(made)
            if t.model == "extras.tag":
                self.tag_id = self.ids["extras.tag"][(TAG,)]
        for i in range(0, len(changed), CHUNK):
            ep.update(changed[i:i + CHUNK])
            self.result.updated[t.model] = self.result.updated.get(t.model, 0) + len(changed[i:i + CHUNK])
        self.result.unchanged[t.model] = self.result.unchanged.get(t.model, 0) + same
        if new or changed:
            self.log(f"{t.model}: {len(new)} created, {len(changed)} updated, {same} unchanged")

    def delete_stale(self, nb, models: tuple[str, ...]) -> None:
        wanted = {t.model: {key_of(t.model, r) for r in t.records()} for t in self.tables}
        for model in models:
            stale = [o["id"] for k, o in sorted(self.existing.get(model, {}).items())
                     if k not in wanted.get(model, set()) and self.twins(o)]
            for i in range(0, len(stale), CHUNK):
                self.endpoint(nb, model).delete(stale[i:i + CHUNK])
                self.result.deleted[model] = self.result.deleted.get(model, 0) + len(stale[i:i + CHUNK])
            if stale:
                self.log(f"{model}: {len(stale)} deleted (tagged {TAG}, no longer in the design)")

    def run(self) -> PushResult:
        """The push; every failure is one PushError line with no secret in it."""
        import pynetbox
        import requests

        try:
            return self._run()
        except PushError as e:
            raise PushError(self.redact(str(e))) from None
        except (pynetbox.RequestError, pynetbox.ContentError, requests.RequestException, ValueError, KeyError, TypeError,
                AttributeError, IndexError) as e:
            what = printable(str(getattr(e, "error", "") or e), ANSWER_CHARS)
            raise PushError(self.redact(f"NetBox at {self.shown} gave an answer twin cannot read ({type(e).__name__}: {what}). "
                                        f"Written before that: {self.result.written()}")) from None

    def _run(self) -> PushResult:
        import pynetbox
        import requests

        if not self.tables:
            raise PushError(f"{self.site}: the design has no placement, fabric or cabling to push")
        nb = self.connect()
        try:
            self.read(nb)
        except pynetbox.RequestError as e:
            raise PushError(f"NetBox at {self.shown} refused a read ({e.req.status_code}: {printable(e.error, ANSWER_CHARS)}); nothing written") from None
        self.check()
        try:
            self.delete_stale(nb, EARLY_DELETE)
            for t in self.tables:
                recs = t.records()
                if t.model == "dcim.location":  # halls before the rows inside them
                    self.write(nb, t, [r for r in recs if not r["parent"]])
                    recs = [r for r in recs if r["parent"]]
                self.write(nb, t, recs)
            self.delete_stale(nb, LATE_DELETE)
        except (pynetbox.RequestError, requests.RequestException) as e:
            why = f"{e.req.status_code}: {e.error}" if isinstance(e, pynetbox.RequestError) else f"{type(e).__name__}: {e}"
            raise PushError(f"NetBox at {self.shown} refused a write ({printable(why, ANSWER_CHARS)}). Written before that: {self.result.written()}."
                            " Every object written carries the tag 'twin'; push again to finish") from None
        return self.result


def push(design: Design, url: str, token: str, log: Callable[[str], None] = lambda _m: None) -> PushResult:
    """Create or update ``design`` in the NetBox at ``url``; see the module docstring."""
    return Pusher(design, url, token, log).run()
