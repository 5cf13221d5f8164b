"""Megatron-LM SC'21 Table 1 against `twin plan` (issue 34): where each published (TP, PP) lands in the search.

For each of the ten GPT rows of sites/selene-a100.yaml, the plan search on the row's GPU count and batch,
recomputation pinned to full (as every Table 1 run was, [megatron-sc21] s5.1) and, apart, unpinned. Printed per
row: the rank of the first plan with the published (TP, PP), its rank among the (TP, PP) pairs (each pair at its best
micro-batch and virtual stages, which Table 1 does not state), how much slower than the pick it is predicted, and
the pick. The known answer (issue 34) is every row in the top 3; docs/howto/plan.md says where and why it is not.

    python bench/bench_plan_table1.py            # a Markdown table (about a minute on 2 cores)
    python bench/bench_plan_table1.py --json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from twin.compiler.pipeline import compile_design  # noqa: E402
from twin.twins.plan import answer  # noqa: E402
from twin.twins.plan.problem import Problem  # noqa: E402


def place(plans: list[dict], tp: int, pp: int) -> tuple[int | None, float | None, int | None]:
    """(1-based rank of the first plan with this TP and PP, its step over the pick's minus one, its rank among the
    (TP, PP) pairs, each at its best micro-batch and virtual stages: what Table 1 states of a plan), None if absent."""
    pairs: list[tuple[int, int]] = []
    for i, e in enumerate(plans):
        pair = (e["plan"]["tp"], e["plan"]["pp"])
        if pair not in pairs:
            pairs.append(pair)
        if pair == (tp, pp):
            return i + 1, e["step_s"] / plans[0]["step_s"] - 1, len(pairs)
    return None, None, None


def rows(top: int = 12) -> list[dict]:
    d = compile_design(ROOT / "sites" / "selene-a100.yaml", placement_method="naive")
    out = []
    for w in d.spec.site.workloads:
        gpus = w.tp * w.pp * w.dp
        row = {"workload": w.name, "gpus": gpus, "tp": w.tp, "pp": w.pp}
        for label, fix in (("full", {"recompute": "full"}), ("any", {})):
            plans = answer.answer(Problem.of(d, w, gpus), fix, top=top)["plans"]
            rank, gap, pair = place(plans, w.tp, w.pp)
            pick = plans[0]["plan"]
            row[label] = {"rank": rank, "slower": gap, "pair_rank": pair, "pick": f"TP{pick['tp']} PP{pick['pp']} v{pick['virtual_stages']} "
                                                             f"mb{pick['micro_batch']} {pick['recompute']}"}
        out.append(row)
    return out


def main() -> None:
    res = rows()
    if "--json" in sys.argv:
        print(json.dumps(res, indent=1))
        return

    def cell(x: dict) -> str:
        if x["rank"] is None:
            return f"not in top 12 (pick {x['pick']})"
        return f"{x['rank']}, pair {x['pair_rank']} ({x['slower']:+.1%}; pick {x['pick']})"

    print("| row | GPUs | published | rank, recompute full | rank, any recompute |\n|---|---|---|---|---|")
    for r in res:
        print(f"| {r['workload']} | {r['gpus']:,} | TP{r['tp']} PP{r['pp']} | {cell(r['full'])} | {cell(r['any'])} |")
    n = sum(1 for r in res if r["full"]["rank"] is not None and r["full"]["rank"] <= 3)
    k = sum(1 for r in res if r["full"]["pair_rank"] is not None and r["full"]["pair_rank"] <= 3)
    print(f"\nin the top 3 plans (recompute full): {n} of {len(res)}; in the top 3 (TP, PP) pairs: {k} of {len(res)}")


if __name__ == "__main__":
    main()
