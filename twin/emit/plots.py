"""PNG plots of a simulation: busbw vs message size, link-load histogram, max/mean link load; each job's
step per routing scheme (:mod:`twin.emit.plots_job`), the campaign's and the power twin's plots.

Why these three: busbw vs size is what nccl-tests users read; the histogram shows *why* a scheme is
slow (a tail of overloaded links under ECMP, a spike at zero under static pinning); max/mean is the
single number Meta quotes (above 1.2 for 1,000 flows on 16 links).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from twin.emit.plots_job import write_job_plots
from twin.emit.plots_reliability import write_plots as campaign_plots
from twin.emit.png import save_png


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_plots(result, out_dir: str | Path) -> list[Path]:
    """Write the plots of ``result`` under ``out_dir``; returns the files, in a stable order."""
    plt = _plt()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    data = result.data
    names = [s["name"] for s in data["schemes"]]
    for case in data["cases"]:
        for c in case["collectives"]:
            stem = f"{case['case']}-{c['name']}"
            rows = c["table"]
            if len(rows) > 1:
                fig, ax = plt.subplots(figsize=(6.4, 4.0))
                for n in names:
                    ax.plot([r["size"] for r in rows], [r[n]["busbw_GBps"] for r in rows], marker="o", label=n)
                ax.set_xscale("log", base=2)
                ax.set_xlabel("message size (bytes)")
                ax.set_ylabel("busbw (GB/s)")
                ax.set_title(f"{c['op']}/{c['algorithm']}, {c['ranks']} ranks ({case['case']})")
                ax.grid(True, alpha=0.3)
                ax.legend()
                files.append(save_png(fig, out / f"{stem}-busbw.png"))
            fig, ax = plt.subplots(figsize=(6.4, 4.0))
            loads = [result.loads.get((case["case"], c["name"], n), np.zeros(0)) for n in names]
            top = max([float(x.max()) for x in loads if len(x)] + [1e-30])
            bins = np.linspace(0, top, 30)
            for n, x in zip(names, loads):
                if len(x):
                    ax.hist(x / top, bins=bins / top, histtype="step", linewidth=1.5, label=n)
            ax.set_xlabel("link load (fraction of the most loaded link)")
            ax.set_ylabel("links")
            ax.set_title(f"fabric link load, {c['name']} ({case['case']})")
            ax.legend()
            files.append(save_png(fig, out / f"{stem}-link-load.png"))
            fig, ax = plt.subplots(figsize=(6.4, 3.6))
            mm = [float("nan") if e["link_load"]["max_over_mean"] is None else e["link_load"]["max_over_mean"] for e in c["schemes"]]
            ax.bar([e["scheme"] for e in c["schemes"]], mm, color="tab:blue")
            ax.axhline(1.0, color="k", linewidth=0.8)
            ax.set_ylabel("max / mean link load")
            ax.set_title(f"load imbalance, {c['name']} ({case['case']})")
            files.append(save_png(fig, out / f"{stem}-max-mean.png"))
    files += write_job_plots(data["cases"], out)  # the job twin: the step per routing scheme
    files += campaign_plots(data.get("campaign"), out)  # the reliability twin
    if getattr(result, "power_views", None):  # the power and thermal twin (twin/twins/power)
        from twin.emit.plots_power import write_power_plots

        files += write_power_plots(result.power_views, data["power"], out)
    return files
