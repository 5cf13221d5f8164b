"""A diff at campus scale in a screen: the changed artifacts and the verdicts grouped, each group counted.

A change to a gigawatt campus touches tens of thousands of files (a config per switch, a pull sheet per
row) and its verdicts are made per hall; one line each does not read. :func:`artifact_groups` puts the
files that changed the same way (changed, added or removed) and share a kind, their path with every
number written ``N`` (``configs/eos/bN-atsw-N.cfg``), in one group: how many, how many in each
building (the first part of a file's name that names a building), the lines added and removed
where counted, and the first :data:`SAMPLE` paths. :func:`verdict_groups` does the same for the
verdicts (``group`` in review.json's risks, :mod:`twin.analysis.verdicts`): one line per check, outcome
and change of outcome. ``--json`` keeps every path and every verdict.

>>> gs = artifact_groups({"configs/eos/b1-atsw-01.cfg": (3, 1), "configs/eos/b2-atsw-01.cfg": (2, 2)}, [], ["report/x.svg"], ["b1", "b2"])
>>> [(g["change"], g["kind"], g["files"], g["buildings"], g["added_lines"]) for g in gs]
[('changed', 'configs/eos/bN-atsw-N.cfg', 2, {'b1': 1, 'b2': 1}, 5), ('removed', 'report/x.svg', 1, {}, None)]
"""

from __future__ import annotations

import re
from collections import Counter

SAMPLE = 3  # paths (or verdicts) named per group; the rest are counted
CHANGES = ("changed", "added", "removed")


def kind(path: str) -> str:
    """The kind of an artifact: its path with every number ``N``.

    >>> kind("cabling/pull-b1-dh12-row01.csv"), kind("bom.csv")
    ('cabling/pull-bN-dhN-rowN.csv', 'bom.csv')
    """
    return re.sub(r"\d+", "N", path)


def building_of(path: str, buildings: set[str]) -> str | None:
    """The building a file is of: the first dash-separated part of its name that names a building.

    >>> building_of("configs/eos/b3-atsw-01.cfg", {"b3"}), building_of("cabling/pull-b3-dh1-row01.csv", {"b3"}), building_of("bom.csv", {"b3"})
    ('b3', 'b3', None)
    """
    stem = path.rsplit("/", 1)[-1].split(".", 1)[0]
    return next((p for p in stem.split("-") if p in buildings), None)


def artifact_groups(changed: dict[str, tuple[int | None, int | None]], added: list[str], removed: list[str],
                    buildings: list[str] | tuple[str, ...] = ()) -> list[dict]:
    """One dict per (change, kind), in the order changed, added, removed and then by kind: ``files``,
    ``buildings`` (files per building, in building order; empty when no file names one), ``added_lines``
    and ``removed_lines`` (None when some file was too large to count) and ``sample`` (the first paths)."""
    names = set(buildings)
    order = {b: i for i, b in enumerate(buildings)}
    out: list[dict] = []
    for change, paths in (("changed", list(changed)), ("added", added), ("removed", removed)):
        by: dict[str, dict] = {}
        for p in sorted(paths):
            g = by.setdefault(kind(p), {"change": change, "kind": kind(p), "files": 0, "buildings": Counter(), "added_lines": 0,
                                        "removed_lines": 0, "sample": []})
            g["files"] += 1
            b = building_of(p, names)
            if b is not None:
                g["buildings"][b] += 1
            if len(g["sample"]) < SAMPLE:
                g["sample"].append(p)
            plus, minus = changed.get(p, (None, None)) if change == "changed" else (None, None)
            if plus is None or g["added_lines"] is None:
                g["added_lines"] = g["removed_lines"] = None
            else:
                g["added_lines"] += plus
                g["removed_lines"] += minus
        for k in sorted(by):
            g = by[k]
            g["buildings"] = dict(sorted(g["buildings"].items(), key=lambda kv: order[kv[0]]))
            out.append(g)
    return out


def per_building(g: dict) -> str:
    """Files per building in words ("b1 32, b2 32"), or "-"."""
    return ", ".join(f"{b} {n:,}" for b, n in g["buildings"].items()) or "-"


def verdict_groups(risks: list[dict]) -> list[dict]:
    """The new side's fails and warnings and every check whose outcome changed, grouped by outcome, the old
    outcome, severity and check group (a check without a group is its own): ``status``, ``was``,
    ``label``, ``count``, ``sample`` (the first verdicts), worst first as the risks come."""
    at: dict[tuple, dict] = {}
    out: list[dict] = []
    for r in risks:
        if r["status"] == "pass" and (r["was"] is None or r["was"] == r["status"]):
            continue
        was = None if r["was"] == r["status"] else (r["was"] or "not checked")
        grp = r.get("group") if isinstance(r.get("group"), str) and r.get("group") else None
        k = (r["status"], was, r["severity"], grp or "\x00" + r["key"])
        if k not in at:
            at[k] = {"status": r["status"], "was": was, "label": grp or r["check"], "grouped": grp is not None, "count": 0, "sample": []}
            out.append(at[k])
        g = at[k]
        g["count"] += 1
        if len(g["sample"]) < SAMPLE:
            g["sample"].append(r)
    return out


def verdict_line(g: dict) -> str:
    """One group of verdicts in one line: outcome, what, how many, the first few with their figures."""
    head = g["status"].upper() + ("" if g["was"] is None else f" (was {g['was']})")
    r = g["sample"][0]
    if g["count"] == 1:
        return f"{head}: {r['check']}: {r['value']} against {r['limit']}"
    shown = "; ".join(f"{x.get('instance') or x['key']}: {x['value']}" for x in g["sample"])
    more = f"; and {g['count'] - len(g['sample']):,} more" if g["count"] > len(g["sample"]) else ""
    return f"{head}: {g['label']} x {g['count']:,}: {shown}{more} (against {r['limit']})"


def building_names(doc: dict) -> list[str]:
    """The buildings of a design.json's site by name, in order (names that are not slugs are left out)."""
    site = doc.get("site") if isinstance(doc, dict) else None
    bs = site.get("buildings") if isinstance(site, dict) else None
    names = [b.get("name") for b in bs if isinstance(b, dict)] if isinstance(bs, list) else []
    return [n for n in names if isinstance(n, str) and re.fullmatch(r"[a-z0-9][a-z0-9-]{0,62}", n)]
