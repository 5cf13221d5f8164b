"""PNG plots of a scenario's training jobs: one stacked bar per routing scheme showing where a step's time
goes (compute, pipeline bubble, then each exposed communication part), one figure per case and job.

The parts are the job twin's own (``compute_s``, ``bubble_s`` for the job; ``tp_s``, ``cp_s``,
``pp_exposed_s``, ``dp_exposed_s`` per scheme), the same as the report's step picture
(:data:`twin.emit.pic_twin.PARTS`), so the bar's end is the step time the tables print. Reads only the
JSON-ready result.
"""

from __future__ import annotations

import re
from pathlib import Path

from twin.emit.pic_twin import PARTS
from twin.emit.png import save_png


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _slug(s: str) -> str:
    """A file-name-safe slug: ``lab-llama-8b``, ``ctsw-down``.

    >>> _slug("Llama 3/405B (x)")
    'llama-3-405b-x'
    """
    return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")


def part_value(job: dict, scheme: dict, key: str) -> float:
    """A part's seconds: compute and bubble are the job's (the same under every scheme), the rest the scheme's."""
    return float(job[key] if key in ("compute_s", "bubble_s") else scheme.get(key, 0.0))


def job_stems(cases: list[dict]) -> list[tuple[dict, dict, str]]:
    """(case, job, file stem) for every job of every case; the stem names the case, the workload and, when
    the scenario runs the same workload more than once in a case, its rank order and position."""
    out = []
    for case in cases:
        jobs = case.get("jobs", [])
        for k, j in enumerate(jobs):
            stem = f"{_slug(case['case'])}-job-{_slug(j['workload'])}"
            same = [x for x in jobs if x["workload"] == j["workload"]]
            if len(same) > 1:
                orders = [x.get("order") for x in same]
                stem += f"-{j['order']}" if orders.count(j.get("order")) == 1 and j.get("order") else f"-{k + 1}"
            out.append((case, j, stem))
    return out


def write_job_plots(cases: list[dict], out_dir: str | Path) -> list[Path]:
    """Write one step-breakdown PNG per case and job under ``out_dir``; returns them in a stable order."""
    found = [(c, j, s) for c, j, s in job_stems(cases) if j.get("schemes")]
    if not found:
        return []
    plt = _plt()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for case, j, stem in found:
        schemes = j["schemes"]
        fig, ax = plt.subplots(figsize=(7.2, 1.9 + 0.45 * len(schemes)))
        ys = list(range(len(schemes)))[::-1]
        used = set()
        for y, s in zip(ys, schemes):
            left = 0.0
            for key, label, colour in PARTS:
                v = part_value(j, s, key)
                if v <= 0:
                    continue
                ax.barh(y, v, left=left, color=colour, height=0.6, label=None if label in used else label)
                used.add(label)
                left += v
            ax.text(left, y, f" {s['step_s']:.3f} s", va="center", fontsize=8)
        ax.set_yticks(ys, [s["scheme"] for s in schemes])
        ax.set_xlabel("seconds per training step")
        ax.set_xlim(0, max(s["step_s"] for s in schemes) * 1.18)
        order = f", {j['order']} order" if j.get("order") else ""
        ax.set_title(f"{j['workload']} ({j['parallelism']}, {j['gpus']:,} GPUs{order}), case {case['case']}", fontsize=9)
        ax.legend(fontsize=7, ncol=6, loc="upper center", bbox_to_anchor=(0.5, -0.32), frameon=False)
        files.append(save_png(fig, out / f"{stem}-step.png"))
    return files
