"""Workloads inheriting from a named base, expanded into ordinary workloads before validation.

A what-if or a series of runs writes the model once and each variant names it with ``base:``::

    workloads:
      - {name: llama3-70b, parameters: 70B, layers: 80, hidden_size: 8192, ..., tp: 4, pp: 8, dp: 2}
      - {name: llama3-70b-mb2, base: llama3-70b, micro_batch: 2}
      - {name: llama3-70b-cp2, base: llama3-70b-mb2, cp: 2, dp: 1}

A workload takes every field it does not set from its base, as a hall does from its hall type
(:func:`twin.lang.site.hall_types.merge`): nested mappings (``moe``, ``stragglers``) merge key by key,
anything else (lists such as ``recompute`` or ``fp8``) is replaced whole. A base may itself name a base.
Not inherited: ``name``, and the measured figures (``measured_tflops_per_gpu``, ``tflops_per_gpu``,
``mfu``): a measurement belongs to the run it was taken on. The expansion works on the loaded YAML, so
every inherited value keeps the position of its line in the base, and a finding in it points there and
names the workload (``workload llama3-70b-mb2 (base llama3-70b): ...``). An unknown base, a base that is
not a workload of the site, or bases that name each other in a loop are located errors.
"""

from __future__ import annotations

from dataclasses import replace

from twin.lang.diagnostics import Diagnostic, Severity
from twin.lang.loader import PathT, Source
from twin.lang.site.hall_types import Inherited, merge

MAX_DEPTH = 64  # bases of bases: a chain longer than this is an error (resolved recursively)
NOT_INHERITED = ("name", "base", "measured_tflops_per_gpu", "tflops_per_gpu", "mfu")


def expand(src: Source) -> tuple[Source, list[Diagnostic]]:
    """Workloads with a ``base`` merged with their (expanded) base; errors stop validation.

    >>> from twin.lang.loader import load_text
    >>> text = "workloads:\\n  - {name: a, layers: 2, moe: {experts: 8}, measured_tflops_per_gpu: 400}\\n  - {name: b, base: a, moe: {top_k: 1}}\\n"
    >>> src, diags = expand(load_text(text))
    >>> src.data["workloads"][1], diags
    ({'name': 'b', 'base': 'a', 'moe': {'top_k': 1, 'experts': 8}, 'layers': 2}, [])
    >>> src.locate(("workloads", 1, "layers"))  # the base's line
    (2, 23)
    >>> expand(load_text("workloads:\\n  - {name: a, base: b}\\n  - {name: b, base: a}\\n"))[1][0].message
    'workloads inherit in a loop: a -> b -> a'
    """
    data = src.data
    ws = data.get("workloads") if isinstance(data, dict) else None
    if not isinstance(ws, list) or not any(isinstance(w, dict) and "base" in w for w in ws):
        return src, []
    diags: list[Diagnostic] = []
    index = {w["name"]: i for i, w in enumerate(ws) if isinstance(w, dict) and isinstance(w.get("name"), str)}
    positions = dict(src.positions)
    inherited = dict(src.inherited)
    done: dict[int, dict] = {}
    written: dict[int, list] = {}  # workload -> (path, position) of everything under it: one pass, not one per workload
    for p, xy in positions.items():
        if len(p) > 1 and p[0] == "workloads" and isinstance(p[1], int):
            written.setdefault(p[1], []).append((p, xy))

    def say(path: PathT, message: str, expected: str) -> None:
        diags.append(Diagnostic(Severity.ERROR, src.path, *src.locate(path), tuple(path), message, expected))

    def resolve(i: int, chain: tuple[int, ...]) -> dict | None:
        if i in done:
            return done[i]
        w = ws[i]
        if not (isinstance(w, dict) and "base" in w):
            done[i] = w
            return w
        base = w["base"]
        done[i] = None  # until it resolves: a failed or looping base resolves to nothing, and says so once
        if not isinstance(base, str) or base not in index:
            say(("workloads", i, "base"), f"unknown base workload '{base}'", _names(base, index, w.get("name")))
            return None
        j = index[base]
        if j == i or j in chain:
            ring = chain[chain.index(j):] if j in chain else ()
            loop = [str(ws[k]["name"]) for k in (*ring, i)] + [base]
            say(("workloads", i, "base"), f"workloads inherit in a loop: {' -> '.join(loop)}", "a base that does not lead back to this workload")
            return None
        if len(chain) >= MAX_DEPTH:
            say(("workloads", i, "base"), f"more than {MAX_DEPTH} workloads inherit one from the next", f"a chain of at most {MAX_DEPTH} bases")
            return None
        body = resolve(j, (*chain, i))
        if body is None:
            return None
        body = {k: v for k, v in body.items() if k not in NOT_INHERITED}
        under = written.get(j, [])
        tag = Inherited(str(w.get("name", f"workloads[{i}]")), base, (), of="workload")
        done[i] = merge(body, w, ("workloads", j), ("workloads", i), tag, under, positions, inherited)
        taken = [("workloads", i) + p[2:] for p, _ in under]
        for path in taken:  # a value the base itself inherited: its own origin's path
            came = inherited.get(path)
            if came is not None and came.of == "workload" and came.type_path in inherited:
                inherited[path] = replace(came, type_path=inherited[came.type_path].type_path)
        mine = dict(written.get(i, []))
        written[i] = list({**mine, **{p: positions[p] for p in taken if p in positions and p not in mine}}.items())
        return done[i]

    out = [resolve(i, ()) for i in range(len(ws))]
    if diags:
        return src, list(dict.fromkeys(diags))
    return replace(src, data={**data, "workloads": out}, positions=positions, inherited=inherited), []


def _names(name, index: dict, own) -> str:
    import difflib

    others = [n for n in index if n != own]
    close = difflib.get_close_matches(str(name), others, n=1)
    if close:
        return f"did you mean '{close[0]}'?"
    return "the name of another workload of this site: " + (", ".join(sorted(others)) or "(none)")
