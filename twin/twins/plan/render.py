"""The plan search's answer for a person: text, the picture (step time against memory per GPU, every
scored plan, the pick marked), a scenario that runs the pick under ``twin simulate``, and the site spec with
the pick as a workload of its own."""

from __future__ import annotations

from pathlib import Path

import yaml

from twin.lang.site.workload_models import DEFAULT_ORDER, RECIPE_FIELDS
from twin.twins.plan.space import same_layout

PLAN_FIELDS = ("tp", "cp", "pp", "dp", "ep", "virtual_stages", "micro_batch", "recompute", "zero", "sequence_parallel", "fp8")


def _ms(x: float) -> str:
    return f"{x * 1e3:,.0f} ms" if x < 10 else f"{x:,.2f} s"


def text(res: dict) -> str:
    sp = res["space"]
    pr = ", ".join(f"{k} {v:,}" for k, v in sp["pruned"].items() if v)
    lines = [f"{res['workload']} on {res['gpus']:,} GPUs of {res['site']} (stack {res['stack']}, global batch {res['global_batch']:,} "
             f"x {res['sequence_length']:,} tokens, {res['hbm_GB']:.1f} GB HBM)",
             f"plans: {sp['enumerated']:,} enumerated; pruned {pr or 'none'}; {sp['feasible']:,} feasible, {sp['scored']:,} scored by the "
             f"fast stage, {sp['bounded']:,} bounded out as slower than the leaders ({sp['bounded'] - sp['bounded_by_exchanges']:,} by their "
             f"compute alone, {sp['bounded_by_exchanges']:,} with their model-parallel exchanges timed); "
             f"{sp['collectives_timed']:,} collectives timed on the fabric",
             "", f"{'#':>2}  {'step':>9}  {'fast':>9}  {'tokens/s':>11}  {'MFU':>5}  {'memory':>7}  plan"]
    order = sp.get("stack_limits", {}).get("order")
    if order and "order" not in sp.get("pins", {}):  # why the rank orders are few: the framework lays ranks out so
        one = len(order) == 1
        lines.insert(2, f"rank order{'' if one else 's'}: {', '.join(order)}, the {'one' if one else 'ones'} stack {res['stack']} lays "
                        "its groups out in (its plans: orders in the catalog; --fix order=... searches another)")
    md = res.get("model") or {}
    if sp["pruned"].get("tp") and md.get("ffn_from") == "parameters":  # why so few TP sizes: an FFN nobody stated
        lines.insert(2, f"TP must divide the FFN, {md['ffn_hidden_size']:,}, derived from the parameter count (ffn_hidden_size is "
                        f"not stated; --set ffn_hidden_size=N states it), {md['heads']} heads and {md['kv_heads']} KV heads")
    for n, e in enumerate(res["plans"], 1):
        lines.append(f"{n:>2}  {_ms(e['step_s']):>9}  {_ms(e['fast_step_s']):>9}  {e['tokens_per_s']:>11,.0f}  {e['mfu']:>5.1%}  "
                     f"{e['memory_GB']['total']:>5.1f}GB  {e['label']}")
    lines.append(f"fast stage against the full twin on these {len(res['plans'])}: rank correlation {res['rank_correlation']:.2f}")
    pick = res["plans"][0]
    b = pick["parts_s"]
    lines += ["", "the pick's step: " + ", ".join(f"{k.replace('_s', '')} {_ms(v)}" for k, v in b.items() if v > 0 and k != "step_s"),
              "memory per GPU: " + ", ".join(f"{k} {v:.1f} GB" for k, v in pick["memory_GB"].items())
              + f"; {res['hbm_GB'] - res['reserve_GB'] - pick['memory_GB']['total']:.1f} GB of HBM free beyond the {res['reserve_GB']:.0f} GB reserve"]
    tied = res["margin"]["indistinguishable_from_pick"]
    if tied:
        lines.append(f"within the model's error ({res['margin']['model_error']:.1%}) of the pick, so not told apart: {len(tied)} plan(s): "
                     + "; ".join(tied[:3]) + (" ..." if len(tied) > 3 else ""))
    else:
        lines.append(f"the pick leads the runner-up by more than the model's error ({res['margin']['model_error']:.1%})")
    for name, rows in (("runner-up", res["why"]["runner_up"]), ("the rule", res["why"]["rule"])):
        if rows is not None and not rows:
            lines.append(f"against {name}: the same step term by term (it needs less memory or came first)")
        if rows:
            lines.append(f"why it wins against {name}: " + "; ".join(
                f"{r['term']} {'-' if r['difference_s'] < 0 else '+'}{_ms(abs(r['difference_s']))}" for r in rows[:4]))
    lines.append("")
    lines.append("best of each class (how much a constraint costs):")
    for name, e in res["classes"].items():
        lines.append(f"  {name:<34} " + ("no feasible plan" if e is None else
                                           f"{_ms(e['step_s'])} ({e['slower_than_pick']:+.1%})  {e['label']}"))
    st = res.get("stated")
    if st is not None:
        lines += ["", "the workload's own plan: " + (st["label"] or "(none)")]
        if "why_not" in st:
            lines.append(f"  not searched: {st['why_not']}")
        else:
            place = f"#{st['leader']} of the leaders" if st["leader"] else "not among the leaders"
            lines.append(f"  {_ms(st['step_s'])} ({st['slower_than_pick']:+.1%} against the pick), {place}, "
                         f"{st['memory_GB']['total']:.1f} GB per GPU")
            if st["versus"]:
                lines.append("  the pick against it: " + "; ".join(
                    f"{r['term']} {'-' if r['difference_s'] < 0 else '+'}{_ms(abs(r['difference_s']))}" for r in st["versus"][:4]))
    return "\n".join(lines)


def picture(res: dict, scatter: dict, path: Path) -> None:
    """Step time against memory per GPU for every scored plan, the leaders and the pick marked (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    ax.scatter(scatter["memory_GB"], scatter["step_s"], s=4, c="#9aa5b1", label=f"{len(scatter['step_s']):,} scored plans")
    lead = res["plans"]
    ax.scatter([e["memory_GB"]["total"] for e in lead[1:]], [e["step_s"] for e in lead[1:]], s=18, c="#1f77b4", label="leaders (full twin)")
    ax.scatter([lead[0]["memory_GB"]["total"]], [lead[0]["step_s"]], s=90, marker="*", c="#d62728", label="pick: " + lead[0]["label"])
    ax.axvline(res["hbm_GB"], color="#444", lw=0.8, ls="--")
    ax.set_xlabel("memory per GPU (GB); dashed: HBM")
    ax.set_ylabel("step time (s)")
    ax.set_yscale("log")
    ax.set_title(f"{res['workload']} on {res['gpus']:,} GPUs of {res['site']}", fontsize=10)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def scenario(res: dict) -> str:
    """A scenario that runs the pick (``twin simulate SITE --scenario FILE``): its job with the plan's fields."""
    e = res["plans"][0]
    plan = e["plan"]
    recipe = {k: plan[k] for k in PLAN_FIELDS if k in RECIPE_FIELDS}
    if plan.get("dp_shard"):  # hybrid sharding, when the search was asked for it
        recipe["dp_shard"] = plan["dp_shard"]
    rt = res["routing"]
    doc = {"name": f"plan-{res['workload']}"[:63], "routing": [{"name": rt["scheme"], "scheme": "site"}], "jobs": [{"workload": res["workload"], "order": "topology", "dims": plan["dims"],
                                                           "recipe": recipe}]}
    head = (f"# twin plan's pick for {res['workload']} on {res['gpus']:,} GPUs of {res['site']}: {e['label']}\n"
            f"# predicted step {e['step_s']:.4f} s. Run: twin simulate SITE --scenario THIS_FILE\n")
    return head + yaml.safe_dump(doc, sort_keys=False)


def spec_with_pick(text: str, res: dict, names: set[str]) -> tuple[str, str]:
    """The spec's text with the pick appended to its ``workloads:`` list as a workload of its own that inherits
    the searched one (``base:``) and states the plan's fields; every other byte as it was. Returns (text, the
    new workload's name); raises ValueError when the file holds no block list of workloads to append to."""
    e = res["plans"][0]
    plan = e["plan"]
    root = yaml.compose(text)
    seq = next((v for k, v in root.value if k.value == "workloads"), None) if isinstance(root, yaml.MappingNode) else None
    if not isinstance(seq, yaml.SequenceNode) or seq.flow_style or not seq.value:
        raise ValueError("--write-spec: the spec has no block list under workloads: in this file to add the pick to")
    name = f"{res['workload']}-plan"[:63].rstrip("-")
    n = 2
    while name in names:
        name, n = f"{res['workload'][:58]}-plan{n}", n + 1
    fields = {"name": name, "base": res["workload"], **{k: plan[k] for k in PLAN_FIELDS if k in RECIPE_FIELDS}}
    if plan.get("dp_shard"):
        fields["dp_shard"] = plan["dp_shard"]
    last = seq.value[-1]
    col = last.start_mark.column
    body = yaml.safe_dump([fields], sort_keys=False, default_flow_style=False).splitlines()
    pad = " " * max(0, col - 2)
    lines = [f"{pad}# twin plan's pick for {res['workload']} on {res['gpus']:,} GPUs: {e['label']}, predicted step {e['step_s']:.4f} s"]
    if not same_layout(plan["dims"], res.get("dims", DEFAULT_ORDER), plan):
        lines.append(f"{pad}# its rank order ({plan['dims']}) is a scenario job's dims: twin plan --write states it")
    lines += [pad + x for x in body]
    src = text.splitlines(keepends=True)
    at = last.end_mark.line + (1 if last.end_mark.column > 0 else 0)  # the line after the last workload's last line
    while at > 0 and (not src[at - 1].strip() or src[at - 1].lstrip().startswith("#")
                      and len(src[at - 1]) - len(src[at - 1].lstrip()) < col):  # before the blank lines and outer comments after it
        at -= 1
    if at and not src[at - 1].endswith("\n"):
        src[at - 1] += "\n"
    return "".join(src[:at] + [x + "\n" for x in lines] + src[at:]), name
