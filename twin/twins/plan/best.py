"""``plan: best`` in a scenario's job: the plan search's pick replaces the job's plan before any twin runs, so
that ``twin simulate`` and ``twin sweep`` judge each design at its own best plan (a design timed at a plan
chosen for another design is judged unfairly).

The search runs once per such job, on the healthy fabric, with the scenario's first routing scheme and
collective library, and with the job's own settings (overlaps, stragglers, rank order and seed). A job's
``recipe:`` fields that are plan axes (tp, cp, pp, dp, ep, micro_batch, virtual_stages, recompute, zero,
sequence_parallel, fp8) pin the search; its other recipe fields (stack, sequence_length, global_batch,
buckets, ...) change the workload first, and ``dims``, when stated, pins the rank order. The GPU count is
the workload's. Every case, the campaign and the power twin then time the pick; the result's ``plans``
say what was searched and picked, and which leaders the model cannot tell apart.
"""

from __future__ import annotations

from twin.lang.diagnostics import SpecError
from twin.lang.validator import error
from twin.twins.plan.answer import MODEL_ERROR, answer
from twin.twins.plan.problem import Problem
from twin.twins.plan.space import RECOMPUTE
from twin.twins.workload.jobs import with_recipe

AXES = {"tp": "tp", "cp": "cp", "pp": "pp", "dp": "dp", "ep": "ep", "micro_batch": "micro_batch", "virtual_stages": "v",
        "recompute": "recompute", "zero": "zero", "sequence_parallel": "sequence_parallel", "fp8": "fp8", "dp_shard": "dp_shard"}
TOP = 5  # leaders re-timed by the full twin for each job


def _pin(name: str, value, src, path) -> object:
    """A recipe field as the search's pin (a value of the space's axis)."""
    if name == "recompute":
        if value not in RECOMPUTE:
            raise SpecError([error(src, path, f"plan: best searches recompute {', '.join(RECOMPUTE)}; a list of modules cannot pin it",
                                   "none, selective or full")])
        return value
    if name == "fp8":
        if value not in ("none", "linear"):
            raise SpecError([error(src, path, "plan: best searches fp8 none or linear; a list of GEMMs cannot pin it", "none or linear")])
        return int(value == "linear")
    if name == "sequence_parallel":
        return int(bool(value))
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 and name not in ("zero", "dp_shard"):
        raise SpecError([error(src, path, f"{name} {value!r} cannot pin the search", "a whole number")])
    return value


def resolve(design, scn, schemes, lib, src=None, progress=None):
    """The scenario with every ``plan: best`` job's plan replaced by the search's pick, and what each search
    found (the result's ``plans``); a job whose model fits no plan is a located error."""
    if not any(j.plan == "best" for j in scn.jobs):
        return scn, []
    if design is None:
        raise SpecError([error(src, ("jobs",), "plan: best searches a site's workload; this run has no site", "a site spec or built folder")])
    found, jobs = [], list(scn.jobs)
    by_name = {w.name: w for w in design.spec.site.workloads}
    for k, j in enumerate(scn.jobs):
        if j.plan != "best":
            continue
        path = ("jobs", k)
        w = by_name[j.workload]
        if getattr(w, "kind", "training") != "training":
            raise SpecError([error(src, path + ("plan",), f"plan: best searches training plans; {w.name} is a {w.kind} workload", "a training workload")])
        recipe = dict(j.recipe or {})
        pins = {AXES[n]: _pin(n, recipe.pop(n), src, path + ("recipe", n)) for n in list(recipe) if n in AXES}
        if j.virtual_stages:
            pins["v"] = j.virtual_stages
        if "dims" in j.model_fields_set:
            pins["order"] = j.dims
        if recipe:
            w = with_recipe(design, w, recipe, src, path + ("recipe",), checked=False)
        if j.kv_heads:
            w = w.model_copy(update={"kv_heads": j.kv_heads})
        if progress:
            progress(f"plan: best for job {k + 1} ({w.name}, {w.gpus:,} GPUs)")
        try:
            p = Problem.of(design, w, job=j.model_copy(update={"kv_heads": None}))
            p.scheme, p.lib = schemes[0], lib
            res = answer(p, pins, top=TOP)
        except ValueError as e:
            raise SpecError([error(src, path + ("plan",), f"plan: best for {w.name} on {w.gpus:,} GPUs: {e}",
                                   "a model and GPU count some plan fits")]) from None
        pick = res["plans"][0]
        plan = {n: pick["plan"][n] for n in AXES}
        jobs[k] = j.model_copy(update={"recipe": {**recipe, **plan}, "dims": pick["plan"]["dims"], "virtual_stages": None,
                                       "kv_heads": j.kv_heads})
        found.append({"job": k, "workload": w.name, "gpus": w.gpus, "pick": pick["label"], "plan": pick["plan"],
                      "predicted_step_s": pick["step_s"], "pins": pins, "space": res["space"],
                      "model_error": MODEL_ERROR, "indistinguishable_from_pick": res["margin"]["indistinguishable_from_pick"],
                      "runner_up": res["plans"][1]["label"] if len(res["plans"]) > 1 else None,
                      "rule": (res["classes"].get(next((c for c in res["classes"] if c.startswith("rule")), ""), None) or {}).get("label")})
    return scn.model_copy(update={"jobs": jobs}), found
