"""What ``twin as-built`` finds, in words a technician acts on.

Every finding names its cable(s), both planned ends' labels (``hall/Rrow/rack/Uu/device/port``, as
the pull sheets print them), the move that fixes it, the evidence (seen from both ends, from one end
and why not the other, or ends that disagree) and the file:line of each report it rests on.

Kinds: ``missing`` (planned, not seen), ``miscabled`` (one end elsewhere: where it is, where it
belongs), ``swapped`` (two cables crossed, one finding naming both), ``unexpected`` (seen, not
planned), ``degraded`` (InfiniBand: narrower or slower than planned), ``disagree`` (the two ends
report different things), ``conflict`` (one port with two neighbours, or two ports naming the same
silent port). Correct cables are counted, not listed as work.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from twin.asbuilt.plan import End, Plan

FAULTS = ("missing", "miscabled", "swapped", "unexpected", "degraded", "disagree", "conflict")


class Seen(NamedTuple):
    x: End
    y: End
    evidence: str
    width: int
    speed: str
    srcs: tuple[str, ...]


@dataclass
class Finding:
    kind: str
    cables: tuple[str, ...]
    ends: tuple[tuple[str, str], ...]  # labels of each cable's planned ends (an unexpected cable: the ends it was seen at)
    work: End  # where the technician acts: the work order's sort key
    action: str
    evidence: str
    now: str = ""  # where the wrong plug is
    belongs: str = ""  # where it goes
    sources: tuple[str, ...] = ()
    detail: dict = field(default_factory=dict)

    def to_json(self, plan: Plan) -> dict:
        hall, row, _slot, rack, u, dev, port = plan.place(self.work)
        where = {"hall": hall, "row": row, "rack": rack, "u": u, "device": dev, "port": port} if dev in plan.devices else {"device": dev, "port": port}
        return {"kind": self.kind, "cables": list(self.cables), "ends": [list(e) for e in self.ends], "action": self.action,
                "evidence": self.evidence, "now": self.now, "belongs": self.belongs, "where": where,
                "sources": list(self.sources), **self.detail}


class Result:
    def __init__(self, plan: Plan, col) -> None:
        self.plan, self.col = plan, col
        self.findings: list[Finding] = []
        self.correct: list[tuple[int, Seen]] = []
        self.uncovered = 0  # planned cables neither of whose devices reported
        self.absorbed: set[End] = set()  # disputed ports told by the finding of their planned cable

    def add(self, f: Finding) -> None:
        self.findings.append(f)

    def ordered(self) -> list[Finding]:
        """Findings in the order a technician walks the room: hall, row, rack, U, device, port."""
        return sorted(self.findings, key=lambda f: (self.plan.place(f.work), f.kind, f.cables))

    def counts(self) -> dict[str, int]:
        out = {k: 0 for k in FAULTS}
        for f in self.findings:
            out[f.kind] += 1
        return out

    @property
    def ok(self) -> bool:
        return not self.findings


class Wording:
    """The findings' sentences, from the plan's labels and what reported."""

    def __init__(self, plan: Plan, reported: set[str]) -> None:
        self.plan, self.reported = plan, reported
        self.label = plan.label

    def _cable(self, i: int) -> tuple[str, str]:
        return self.plan.labels[i]

    def _silence(self, end: End) -> str:
        dev, port = end
        if dev in self.reported:
            return f"{dev} reports nothing on {port}"
        return f"{dev} is not in the collection" if dev in self.plan.roles else f"{dev} is not in the plan"

    def one_end(self, x: End, y: End) -> str:
        return f"seen from {x[0]} only: {self._silence(y)}"

    def missing(self, i: int) -> Finding:
        p = self.plan
        a, b = p.a[i], p.b[i]
        both = a[0] in self.reported and b[0] in self.reported
        return Finding("missing", (p.ids[i],), (self._cable(i),), a,
                       f"connect {p.ids[i]} from {self.label(a)} to {self.label(b)} (already there: check both optics, the link is down)",
                       ("neither end sees it: " if both else "not seen: ") + f"{self._silence(a)}; {self._silence(b)}")

    def miscabled(self, i: int, keep: End, s: Seen) -> Finding:
        p = self.plan
        target = p.b[i] if p.a[i] == keep else p.a[i]
        moved = s.y if s.x == keep else s.x
        return Finding("miscabled", (p.ids[i],), (self._cable(i),), moved,
                       f"move the plug of {p.ids[i]} from {self.label(moved)} to {self.label(target)}", s.evidence,
                       now=self.label(moved), belongs=self.label(target), sources=s.srcs)

    def swapped(self, i: int, j: int, seen: list[Seen]) -> Finding:
        p = self.plan
        ci = {p.a[i], p.b[i]}
        s1, s2 = seen
        e1i, e1j = (s1.x, s1.y) if s1.x in ci else (s1.y, s1.x)
        e2i, e2j = (s2.x, s2.y) if s2.x in ci else (s2.y, s2.x)
        options = [(e1i, e2j), (e2i, e1j)]  # one end of each seen cable, from different planned cables

        def key(pair: tuple[End, End]) -> tuple:
            (d1, q1), (d2, q2) = pair
            r1, r2 = p.place(pair[0])[:4], p.place(pair[1])[:4]
            return (d1 != d2, r1 != r2, -min(p.level(d1), p.level(d2)), pair)

        u, v = min(options, key=key)
        ev = "both ends" if s1.evidence == s2.evidence == "both ends" else f"{s1.evidence}; {s2.evidence}"
        ids = tuple(sorted((p.ids[i], p.ids[j])))
        return Finding("swapped", ids, (self._cable(i), self._cable(j)), u,
                       f"swap the plugs in {self.label(u)} and {self.label(v)}: {ids[0]} and {ids[1]} are crossed", ev,
                       now=self.label(u), belongs=self.label(v), sources=s1.srcs + s2.srcs)

    def unexpected(self, s: Seen) -> Finding:
        x, y = sorted((s.x, s.y), key=lambda e: (self.plan.level(e[0]), e))
        return Finding("unexpected", (), ((self.label(x), self.label(y)),), x,
                       f"remove the cable between {self.label(x)} and {self.label(y)}: the plan has none there", s.evidence,
                       now=self.label(x), sources=s.srcs)

    def degraded(self, i: int, s: Seen, planned: tuple[int, str]) -> Finding:
        p = self.plan
        w, sp = planned
        return Finding("degraded", (p.ids[i],), (self._cable(i),), p.a[i],
                       f"reseat or replace {p.ids[i]} ({self.label(p.a[i])} to {self.label(p.b[i])}): it trained at "
                       f"{s.width}x{s.speed or '?'}, planned {w}x{sp}", s.evidence, sources=s.srcs,
                       detail={"planned_rate": f"{w}x{sp}", "seen_rate": f"{s.width}x{s.speed}"})

    def disagree(self, i: int | None, stories: list[tuple[End, End, End | None, str]]) -> Finding:
        """The ends of cable ``i`` (or of no planned cable) tell different stories: each story is
        (port, what it reports, what that port reports in turn, source)."""
        p = self.plan
        x = stories[0][0]
        i = p.at.get(x) if i is None else i
        told = []
        for x1, y, z, _src in stories:
            other = f"{y[0]} reports {self.label(z)} on {y[1]}" if z else f"{y[0]} reports more than one neighbour on {y[1]}"
            told.append(f"{x1[0]} reports {self.label(y)} on {x1[1]}, but {other}")
        return Finding("disagree", (p.ids[i],) if i is not None else (), (self._cable(i),) if i is not None else (), x,
                       f"check the cable at {self.label(x)}: the two ends tell different stories (a stale table or a cable moved "
                       f"while collecting); collect both devices again", "the ends disagree: " + "; ".join(told),
                       now=self.label(x), sources=tuple(s[3] for s in stories))

    def conflict(self, x: End, others: list[tuple[End, str]], silent: bool = False) -> Finding:
        p = self.plan
        i = p.at.get(x)
        names = ", ".join(dict.fromkeys(self.label(e) for e, _ in others))
        if silent:
            ev = f"{len(others)} ports report {self.label(x)} as their neighbour: {names}"
            act = f"trace the cables at {names}: only one can end at {self.label(x)}"
        else:
            ev = f"{self.label(x)} is reported with {len(set(e for e, _ in others))} different neighbours: {names}"
            act = f"check {self.label(x)}: one cable per port (a breakout, a hub or a stale table answers with two); collect again"
        return Finding("conflict", (p.ids[i],) if i is not None else (), (self._cable(i),) if i is not None else (), x, act, ev,
                       now=self.label(x), sources=tuple(dict.fromkeys(s for _, s in others)))
