"""Claims held against the plan: which cables are where they belong, and what to do about the rest.

1. **Claims to seen cables.** A port reporting two different neighbours is a *conflict* (left out).
   Two ports naming each other are a cable seen from both ends. A port naming one that reports
   nothing is a cable seen from one end (the other device silent on that port, or not in the
   collection); two ports naming the same silent port are a conflict. A port naming one that names
   a third is a *disagreement*: the two ends tell different stories, and neither is taken as a cable.
2. **Correct** cables are seen exactly as planned (InfiniBand: at the planned width and speed, else
   *degraded*).
3. **The rest** is a graph in which every port has at most one planned cable not seen and at most one
   seen cable not planned, so its pieces are paths and cycles alternating between the two.
   A planned cable alone is *missing* (a cable whose ends' devices were both not reported is not
   covered, not missing); a seen cable alone is *unexpected*; a cycle of two of each is two cables
   *swapped* (one finding); otherwise seen cables are paired with an adjacent planned one as
   *miscabled* (the cable sits with one end where planned, the other end elsewhere), choosing the
   pairing with the most pairs and then the one that moves ends on higher-level devices (a plug in a
   switch panel moves more often than one in a NIC); what is left is missing or unexpected.
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from twin.asbuilt.collect import Claim, Collection
from twin.asbuilt.findings import Result, Seen, Wording
from twin.asbuilt.plan import End
from twin.asbuilt.plan_ib import SPEEDS


def analyse(col: Collection, check_speed: bool = True) -> Result:
    plan = col.plan
    w = Wording(plan, col.reported)
    res = Result(plan, col)
    claim, more, conflicts = _claims(col, res, w)
    seen, disputes = _seen(col, claim, more, conflicts, res, w)
    at = plan.at
    s_edge: dict[End, int] = {}
    for k, s in enumerate(seen):
        i = at.get(s.x)
        if i is not None and i == at.get(s.y):
            res.correct.append((i, s))
            planned = plan.rate.get(plan.a[i])
            if planned and s.width and _slower(s, planned, check_speed):
                res.add(w.degraded(i, s, planned))
        else:
            s_edge[s.x] = s_edge[s.y] = k
    done = {i for i, _ in res.correct}
    p_edge: dict[End, int] = {}
    for i in range(len(plan.ids)):
        if i in done:
            continue
        a, b = plan.a[i], plan.b[i]
        if a[0] in col.reported or b[0] in col.reported or a in s_edge or b in s_edge:
            p_edge[a] = p_edge[b] = i
        else:
            res.uncovered += 1
    for piece in _pieces(plan, p_edge, s_edge, seen):
        _interpret(piece, plan, seen, res, w, disputes, conflicts)
    for x, (y, z, src) in sorted(disputes.items()):
        if x not in res.absorbed:
            res.add(w.disagree(None, [(x, y, z, src)]))
    return res


def _claims(col: Collection, res: Result, w: Wording) -> tuple[dict[End, Claim], dict[End, list[str]], dict[End, list]]:
    """x -> its one claim (the first; the same neighbour reported again adds a source to ``more``),
    and the ports reporting two different neighbours apart (conflicts)."""
    claim: dict[End, Claim] = {}
    more: dict[End, list[str]] = {}
    conflicts: dict[End, list] = {}
    get = claim.get
    for c in col.claims:
        x = c.x
        cur = get(x)
        if cur is None:
            if x in conflicts:
                conflicts[x].append(c)
            else:
                claim[x] = c
        elif cur.y == c.y:
            more.setdefault(x, []).append(c.src)
        else:
            conflicts[x] = [cur, c]
            del claim[x]
    for x, cs in conflicts.items():
        res.add(w.conflict(x, [(c.y, c.src) for c in cs]))
    return claim, more, conflicts


def _seen(col: Collection, claim: dict[End, Claim], more: dict, conflicts: dict, res: Result, w: Wording) -> tuple[list[Seen], dict]:
    seen: list[Seen] = []
    disputes: dict[End, tuple[End, End | None, str]] = {}  # x -> (what x says, what that port says, x's source)
    silent: dict[End, list[End]] = defaultdict(list)
    get = claim.get
    for x, c in claim.items():
        y = c.y
        back = get(y)
        if back is not None and back.y == x:
            if x < y:
                width = min(c.width, back.width) if c.width and back.width else c.width or back.width
                speed = min(c.speed, back.speed, key=SPEEDS.__getitem__) if c.speed and back.speed else c.speed or back.speed
                srcs = (c.src, back.src) if x not in more and y not in more else (c.src, *more.get(x, ()), back.src, *more.get(y, ()))
                seen.append(Seen(x, y, "both ends", width, speed, srcs))
        elif back is not None or y in conflicts:
            disputes[x] = (y, back.y if back is not None else None, c.src)
        else:
            silent[y].append(x)
    for y, xs in silent.items():
        if len(xs) > 1:
            res.add(w.conflict(y, [(x, claim[x].src) for x in xs], silent=True))
            continue
        x = xs[0]
        c = claim[x]
        seen.append(Seen(x, y, w.one_end(x, y), c.width, c.speed, (c.src, *more.get(x, ()))))
    return seen, disputes


def _slower(s: Seen, planned: tuple[int, str], check_speed: bool) -> bool:
    width, speed = planned
    return s.width < width or (check_speed and bool(s.speed) and SPEEDS[s.speed] < SPEEDS[speed])


class Edge(NamedTuple):
    kind: str  # "P" planned and not seen, "S" seen and not planned
    idx: int  # cable index or seen index
    u: End  # the end the walk entered by
    v: End  # the end it left by


def _pieces(plan, p_edge: dict[End, int], s_edge: dict[End, int], seen: list[Seen]) -> list[tuple[list[Edge], bool]]:
    """The alternating paths and cycles, each as its edges in order and whether it closes."""

    def other(kind: str, idx: int, end: End) -> End:
        if kind == "P":
            return plan.b[idx] if plan.a[idx] == end else plan.a[idx]
        s = seen[idx]
        return s.y if s.x == end else s.x

    used: set[tuple[str, int]] = set()
    out = []
    ends = sorted(set(p_edge) | set(s_edge))
    starts = [e for e in ends if (e in p_edge) != (e in s_edge)] + ends  # path ends first, then cycles
    for e in starts:
        kinds = [k for k, table in (("P", p_edge), ("S", s_edge)) if e in table and (k, table[e]) not in used]
        if not kinds:
            continue
        kind, cur, path = kinds[0], e, []
        while True:
            idx = (p_edge if kind == "P" else s_edge).get(cur)
            if idx is None or (kind, idx) in used:
                break
            used.add((kind, idx))
            nxt = other(kind, idx, cur)
            path.append(Edge(kind, idx, cur, nxt))
            cur, kind = nxt, "S" if kind == "P" else "P"
        out.append((path, len(path) > 2 and path[-1].v == path[0].u))
    return out


def _interpret(piece: tuple[list[Edge], bool], plan, seen: list[Seen], res: Result, w: Wording, disputes: dict, conflicts: dict) -> None:
    edges, cycle = piece
    if cycle and len(edges) == 4:
        p = [e for e in edges if e.kind == "P"]
        res.add(w.swapped(p[0].idx, p[1].idx, [seen[e.idx] for e in edges if e.kind == "S"]))
        return
    pairs = _best_pairs(edges, cycle, plan)
    paired = {i for pair in pairs for i in pair}
    for i, j in pairs:
        pe, se = (edges[i], edges[j]) if edges[i].kind == "P" else (edges[j], edges[i])
        keep = pe.u if pe.u in (se.u, se.v) else pe.v  # the end in place
        res.add(w.miscabled(pe.idx, keep, seen[se.idx]))
    for k, e in enumerate(edges):
        if k in paired:
            continue
        if e.kind == "S":
            res.add(w.unexpected(seen[e.idx]))
            continue
        a, b = plan.a[e.idx], plan.b[e.idx]
        stories = [(x, *disputes[x]) for x in (a, b) if x in disputes]
        if stories:
            res.absorbed.update(s[0] for s in stories)
            res.add(w.disagree(e.idx, stories))
        elif a not in conflicts and b not in conflicts:  # a planned cable at a conflicted port is told by the conflict finding
            res.add(w.missing(e.idx))


def _best_pairs(edges: list[Edge], cycle: bool, plan) -> list[tuple[int, int]]:
    """Pairs of adjacent edges (one planned, one seen) with the most pairs, then the highest score
    (moving ends on higher-level devices), by dynamic programming along the path; a cycle is cut at
    either of its first two edges."""

    def score(i: int, j: int) -> int:
        pe, se = (edges[i], edges[j]) if edges[i].kind == "P" else (edges[j], edges[i])
        shared = pe.u if pe.u in (se.u, se.v) else pe.v
        moved = se.v if se.u == shared else se.u
        return plan.level(moved[0]) - plan.level(shared[0])

    def along(order: list[int]) -> tuple[tuple[int, int], list[tuple[int, int]]]:
        best: list[tuple[tuple[int, int], list]] = [((0, 0), [])] * (len(order) + 1)
        for n in range(1, len(order) + 1):
            best[n] = best[n - 1]
            if n >= 2:
                (cnt, sc), prs = best[n - 2]
                cand = ((cnt + 1, sc + score(order[n - 2], order[n - 1])), prs + [(order[n - 2], order[n - 1])])
                if cand[0] > best[n][0]:
                    best[n] = cand
        return best[-1]

    idx = list(range(len(edges)))
    if not cycle:
        return along(idx)[1]
    return max(along(idx), along(idx[1:] + idx[:1]), key=lambda r: r[0])[1]
