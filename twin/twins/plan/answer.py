"""The plan search's answer: the leaders re-timed by the full job twin, why the pick wins, the best plan of
each class and whether the leaders can be told apart.

- **Leaders**: the ``top`` best plans of the fast stage, each re-timed by
  :func:`twin.twins.workload.jobs.simulate_job` on the same fabric (step, tokens per second, MFU, memory by
  part, the step's parts); the answer's order is the full twin's, and Spearman's rank correlation of the
  two stages' orders is reported.
- **Why it wins**: the pick's step parts against the runner-up's and against the common rule (TP = the GPUs
  of one server, the best plan that keeps it), term by term.
- **Classes**: the best plan without pipeline parallelism, without context parallelism, without
  recomputation, with TP inside one server, and leaving the memory reserve free once more (the reserve,
  :data:`twin.compiler.resolve.memory.RESERVE_BYTES`, is assumed: a pick at the edge of it may not fit a
  run that needs more), so that the cost of each constraint is visible.
- **Margin**: plans whose predicted step lies within :data:`MODEL_ERROR` of the pick's cannot be told
  apart by the model; the answer names them.
- **The workload's own plan** (``stated``, the plan the spec writes, scaled to the GPU count by DP): its
  step by the full twin, how far behind the pick, its place among the leaders and why the pick wins against
  it term by term; or why it is not among the plans searched (it breaks a rule of the space, does not fit in
  memory, or the pins leave it out).
"""

from __future__ import annotations

import numpy as np

from twin.compiler.resolve import memory
from twin.lang.scenario.job import Case
from twin.twins.plan import search
from twin.twins.plan.fast import PARTS
from twin.twins.plan.problem import Problem, row
from twin.twins.plan.space import ORDERS, RECOMPUTE, order_allowed
from twin.twins.plan.tables import strides
from twin.twins.workload import jobs
from twin.twins.workload.validation import STATED_ERROR

# the job twin's stated error (its mean absolute error on the open validation set, owned by
# twin.twins.workload.validation): two plans closer than this are not told apart
MODEL_ERROR = STATED_ERROR
PART_NAMES = {"compute_s": "compute", "recompute_s": "of which recomputation", "bubble_s": "pipeline bubble",
              "straggler_s": "stragglers", "tp_s": "exposed TP", "cp_s": "exposed CP", "ep_s": "exposed EP",
              "pp_s": "exposed PP", "dp_s": "exposed DP"}


def per_server(net) -> int:
    """GPUs in one server of the fabric (the largest)."""
    return int(np.bincount(net.gpu_server).max())


def classes(p: Problem):
    """The masks of the answer's classes over a space's columns and, where given, their memory by part
    (:func:`search.search`'s ``mask_fn``)."""
    k = per_server(p.net)

    def fn(cols, mem=None):
        st = strides(cols)
        inside = (cols["tp"] == 1) | ((st["tp"] <= 1) & (k % cols["tp"] == 0))
        # the rule: TP = the GPUs of a server; where the model cannot split that far (a 72-GPU NVLink rack), the
        # largest TP the model allows that divides the server, so that its groups still tile the server
        sizes = sorted({int(t) for t in np.unique(cols["tp"][inside])} if len(cols["tp"]) else {k})
        t = k if k in sizes or not sizes else max(sizes)
        name = f"rule: TP = {k} (GPUs per server)" if t == k else f"rule: TP = {t} (the largest the model allows in {'an' if str(k)[0] == '8' or k in (11, 18) else 'a'} {k}-GPU server)"
        out = {"without PP": cols["pp"] == 1, "without CP": cols["cp"] == 1, "without recomputation": cols["rc"] == 0,
               "TP inside the server": inside, name: (cols["tp"] == t) & inside}
        if mem is not None:
            out[headroom_class()] = mem["total"] <= p.hbm - 2 * memory.RESERVE_BYTES
        return out
    return fn


def headroom_class() -> str:
    """The class of plans that leave the reserve free once more: its name."""
    return f"{memory.RESERVE_BYTES / 1e9:.0f} GB more HBM left free"


def describe(c: dict) -> dict:
    """A plan as the workload language states it."""
    return {"tp": c["tp"], "cp": c["cp"], "pp": c["pp"], "dp": c["dp"], "ep": c["ep"], "virtual_stages": c["v"],
            "micro_batch": c["mb"], "recompute": RECOMPUTE[c["rc"]], "zero": c["zero"], "sequence_parallel": bool(c["sp"]),
            "fp8": "linear" if c["fp8"] else "none", "dp_shard": c.get("shard") or None, "dims": c["dims"]}


def label(c: dict) -> str:
    """One line: ``TP8 CP1 PP16 DP128 v1 mb1 rc=none zero0 SP tp-cp-pp-dp``."""
    d = describe(c)
    return (f"TP{d['tp']} CP{d['cp']} PP{d['pp']} DP{d['dp']}" + (f" EP{d['ep']}" if d["ep"] > 1 else "")
            + f" v{d['virtual_stages']} mb{d['micro_batch']} recompute={d['recompute']} zero{d['zero']}"
            + (f" shard{d['dp_shard']}" if d["dp_shard"] else "")
            + (" SP" if d["sequence_parallel"] else "") + (" FP8" if c["fp8"] else "") + f" {d['dims']}")


def full_twin(p: Problem, c: dict) -> dict:
    """The full job twin's result for one plan on the problem's fabric."""
    w = p.workload_of(c)
    return jobs.simulate_job(p.design, p.net, p.cfg(c["dims"]), [p.scheme], p.lib,
                             Case(name="plan"), set(), None, ("plan",), workload=w)


def _parts(s: search.Searched, i: int) -> dict:
    return {k: float(s.parts[k][i]) for k in (*PARTS, "straggler_s", "step_s")}


def _full_parts(full: dict) -> dict:
    """The step's parts as the full twin gives them (for a plan the fast stage bounded out unscored)."""
    x = full["schemes"][0]
    return {"compute_s": full["compute_s"], "bubble_s": full["bubble_s"], "tp_s": x["tp_s"], "cp_s": x["cp_s"], "ep_s": x["ep_s"],
            "pp_s": x["pp_exposed_s"], "dp_s": x["dp_exposed_s"], "recompute_s": full["microbatch_recompute_s"] * full["microbatches"],
            "straggler_s": full["straggler_s"], "step_s": x["step_s"]}


def _entry(s: search.Searched, i: int, full: dict | None) -> dict:
    c = row(s.cols, i)
    e = {"plan": describe(c), "label": label(c), "fast_step_s": float(s.step[i]), "parts_s": _parts(s, i),
         "memory_GB": {k: float(v[i]) / 1e9 for k, v in s.memory.items()}}
    if full is not None:
        x = full["schemes"][0]
        e.update(step_s=x["step_s"], tokens_per_s=x["tokens_per_s"], mfu=x["predicted_mfu"],
                 tflops_per_gpu=x["predicted_tflops_per_gpu"], comm_by_kind=x["comm_by_kind"])
    return e


def versus(a: dict, b: dict) -> list[dict]:
    """Term by term, where ``a`` gains (negative) or loses against ``b``: the step's parts, largest first."""
    rows = [{"term": PART_NAMES[k], "pick_s": a["parts_s"][k], "other_s": b["parts_s"][k],
             "difference_s": a["parts_s"][k] - b["parts_s"][k]} for k in PART_NAMES]
    return sorted([r for r in rows if abs(r["difference_s"]) > 1e-9], key=lambda r: -abs(r["difference_s"]))


KEYS = ("tp", "cp", "pp", "dp", "ep", "v", "mb", "rc", "zero", "sp", "fp8", "shard", "order")


STACK_AXES = (("fp8", "fp8", "FP8"), ("cp", "cp", "context parallelism"), ("v", "v", "interleaved virtual stages"),
              ("ep", "ep", "expert parallelism"), ("zero", "zero", "ZeRO stage"), ("sp", "sequence_parallel", "sequence parallelism"))


def _outside(p: Problem, c: dict) -> str:
    """Why a plan that fits is not in the space: the stack's own limits (catalog ``plans:``) first."""
    lim = p.stack_limits()
    stack = p.base.stack
    for key, axis, name in STACK_AXES:
        if axis in lim:
            allowed = lim[axis] if isinstance(lim[axis], list) else [lim[axis]]
            if c.get(key, 0) not in allowed:
                what = name if key in ("fp8", "sp") else f"{name} {c.get(key, 0)}"
                return (f"stack {stack} does not run {what} (its plans: in the catalog; "
                        f"--fix {axis}={c.get(key, 0)} searches it anyway)")
    if RECOMPUTE[c.get("rc", 0)] not in lim["recompute"]:
        return f"stack {stack} does not run recompute={RECOMPUTE[c.get('rc', 0)]} (its plans: in the catalog)"
    if "order" in lim:
        if not order_allowed(p.axes(), ORDERS[c.get("order", 0)], {d: c.get(d, 1) for d in ("tp", "cp", "pp", "dp")}):
            return f"stack {stack} does not lay its ranks out in {ORDERS[c.get('order', 0)]} (its plans: orders in the catalog)"
    return "it breaks a rule of the space (the counts on the plans: line say which)"


def stated_entry(p: Problem, s: search.Searched, c: dict | str | None, fixed: dict | None, pick: dict, entries: list[dict]) -> dict | None:
    """The workload's own plan ``c`` (a plan of the space's columns, or why it could not be stated) against the pick."""
    if c is None:
        return None
    if isinstance(c, str):
        return {"label": None, "why_not": c}
    hit = np.ones(len(s.cols["tp"]), bool)
    for k in KEYS:
        hit &= s.cols[k] == c.get(k, 0)
    found = np.flatnonzero(hit)
    if not len(found):
        m = memory.training(p.shape, memory.Plan.of(p.workload_of(c), p.base.fused_attention, optimizer_bytes=p.base.optimizer_bytes,
                                                    grad_bytes=p.base.grad_bytes), p.hbm)
        why = (f"it does not fit: {m.total / 1e9:.1f} GB per GPU, over the {(p.hbm - memory.RESERVE_BYTES) / 1e9:.1f} GB the "
               f"{memory.RESERVE_BYTES / 1e9:.0f} GB reserve leaves" if not m.fits else
               "the pins (--fix) leave it out" if fixed else _outside(p, c))
        return {"label": label(c), "why_not": why}
    i = int(found[0])
    full = full_twin(p, row(s.cols, i))
    e = _entry(s, i, full)
    if not s.scored[i]:  # bounded out by the fast stage: its parts are the full twin's
        e["fast_step_s"], e["parts_s"] = None, _full_parts(full)
    e["slower_than_pick"] = e["step_s"] / pick["step_s"] - 1
    e["leader"] = next((n for n, x in enumerate(entries, 1) if x["label"] == e["label"]), None)
    e["versus"] = versus(pick, e)
    return e


def answer(p: Problem, fixed: dict | None = None, top: int = 10, progress=None, stated: dict | str | None = None) -> dict:
    """Search, re-time the leaders with the full twin, and explain (module docstring); ``stated``: the workload's
    own plan (space columns), or why it could not be stated as one."""
    s = search.search(p, fixed, keep=top, mask_fn=classes(p), progress=progress)
    lead = s.best(None, top)
    if not len(lead):
        why = "; ".join(f"{k}: {v}" for k, v in s.coll.refused.items()) or "no plan was scored"
        raise ValueError(f"no plan of {p.workload.name} on {p.gpus:,} GPUs can be timed: {why}")
    fulls = []
    for n, i in enumerate(lead):
        if progress is not None:
            progress("full twin", n, len(lead), None, None)
        fulls.append(full_twin(p, row(s.cols, int(i))))
    entries = [_entry(s, int(i), f) for i, f in zip(lead, fulls)]
    fast_steps = np.array([e["fast_step_s"] for e in entries])
    full_steps = np.array([e["step_s"] for e in entries])
    mem = np.array([e["memory_GB"]["total"] for e in entries])
    entries = [entries[j] for j in np.lexsort((np.arange(len(entries)), mem, full_steps))]  # the full twin's order
    pick = entries[0]
    tied = [e["label"] for e in entries[1:] if e["step_s"] <= pick["step_s"] * (1 + MODEL_ERROR)]
    by_class = {}
    for name, mask in classes(p)(s.cols, s.memory).items():
        b = s.best(mask, 1)
        if not len(b):
            by_class[name] = None
            continue
        e = _entry(s, int(b[0]), full_twin(p, row(s.cols, int(b[0]))))
        e["slower_than_pick"] = e["step_s"] / pick["step_s"] - 1
        by_class[name] = e
    rule = next((v for k, v in by_class.items() if k.startswith("rule")), None)
    return {
        "site": p.design.spec.site.name, "workload": p.workload.name, "gpus": p.gpus, "stack": p.base.stack, "dims": p.base.dims,
        "global_batch": p.workload.global_batch, "sequence_length": p.workload.sequence_length,
        "hbm_GB": p.hbm / 1e9, "reserve_GB": memory.RESERVE_BYTES / 1e9, "routing": {"scheme": p.scheme.kind, "qps": p.scheme.qps},
        "model": {"ffn_hidden_size": p.shape.ffn, "heads": p.shape.heads, "kv_heads": p.shape.kv_heads,
                  "ffn_from": "stated" if p.workload.ffn_hidden_size is not None else
                  "4 x hidden" if p.shape.ffn == 4 * p.workload.hidden_size else "parameters"},
        "space": {"enumerated": s.space.enumerated, "pruned": s.pruned, "feasible": s.feasible,
                  "scored": int(s.scored.sum()), "bounded": int(s.feasible - s.scored.sum()),
                  "bounded_by_exchanges": int((~s.scored & ~np.isnan(s.tight)).sum()),
                  "collectives_timed": s.coll.calls, "collectives_refused": dict(s.coll.refused),
                  "stack_limits": p.stack_limits(), "pins": fixed or {}},
        "seconds": {**s.seconds, "collectives_s": sum(s.coll.seconds.values())},
        "plans": entries,
        "rank_correlation": search.spearman(fast_steps, full_steps),
        "margin": {"model_error": MODEL_ERROR, "indistinguishable_from_pick": tied},
        "why": {"runner_up": versus(pick, entries[1]) if len(entries) > 1 else [],
                "rule": versus(pick, rule) if rule is not None else None},
        "classes": by_class,
        "stated": stated_entry(p, s, stated, fixed, pick, entries),
        "scatter": {"step_s": s.step[s.scored].tolist(), "memory_GB": (s.memory["total"][s.scored] / 1e9).tolist()},
    }
