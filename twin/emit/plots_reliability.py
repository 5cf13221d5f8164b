"""PNG plots of a campaign: ETTR vs checkpoint interval, vs hot spare servers, vs job size.

Each shows the median over runs with the P10-P90 band, so a reader sees both the answer and how much
the dice move it. Reads only the JSON-ready campaign dict.
"""

from __future__ import annotations

from pathlib import Path

from twin.emit.png import save_png


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_plots(c: dict | None, out_dir: str | Path) -> list[Path]:
    """Write the campaign's plots under ``out_dir`` (none without sweeps); returns them in a stable order."""
    if not c or not c.get("sweeps"):
        return []
    plt = _plt()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    s = c["sweeps"]
    files = []
    if "interval" in s:
        rows = s["interval"]["rows"]
        fig, ax = _band(plt, [r["interval_s"] / 60 for r in rows], [r["ettr"] for r in rows], "checkpoint interval (min)", "o")
        ax.set_xscale("log")
        ax.axvline(s["interval"]["best_s"] / 60, color="tab:green", linestyle="--", label=f"best swept {s['interval']['best_s'] / 60:.1f} min")
        if s["interval"]["young_daly_s"]:
            ax.axvline(s["interval"]["young_daly_s"] / 60, color="tab:red", linestyle=":", label=f"Young/Daly {s['interval']['young_daly_s'] / 60:.1f} min")
        ax.set_title(f"ETTR vs checkpoint interval, {c['job']['gpus']:,} GPUs, {c['days']:g} days")
        ax.legend()
        files.append(save_png(fig, out / "campaign-ettr-vs-interval.png"))
    if "spares" in s:
        rows = s["spares"]["rows"]
        fig, ax = _band(plt, [r["spares"] for r in rows], [r["ettr"] for r in rows], "hot spare servers", "o")
        unl = s["spares"]["unlimited"]["mean"]
        ax.axhline(100 * unl, color="k", linewidth=0.8, label=f"unlimited pool {100 * unl:.1f}%")
        ax.axhline(100 * unl * (1 - s["spares"]["tolerance"]), color="tab:red", linestyle=":", label="within 0.5%")
        if s["spares"]["smallest_within_tolerance"] is not None:
            ax.axvline(s["spares"]["smallest_within_tolerance"], color="tab:green", linestyle="--",
                       label=f"smallest pool {s['spares']['smallest_within_tolerance']}")
        ax.set_title(f"ETTR vs spare pool, {c['job']['gpus']:,} GPUs, {c['days']:g} days")
        ax.legend()
        files.append(save_png(fig, out / "campaign-ettr-vs-spares.png"))
    if "gpus" in s:
        rows = s["gpus"]["rows"]
        fig, ax = _band(plt, [r["gpus"] for r in rows], [r["ettr"] for r in rows], "GPUs in the job", "o")
        ax.set_xscale("log", base=2)
        ext = [r["gpus"] for r in rows if r["extrapolated"]]
        if ext:
            ax.axvspan(min(ext), max(ext), color="0.9", label="extrapolated beyond the site")
        ax.set_title(f"ETTR vs job size, {c['days']:g} days, each at its Young/Daly interval")
        ax.legend()
        files.append(save_png(fig, out / "campaign-ettr-vs-gpus.png"))
    return files


def _band(plt, xs, qs, xlabel: str, marker: str):
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.fill_between(xs, [100 * q["p10"] for q in qs], [100 * q["p90"] for q in qs], alpha=0.25, color="tab:blue", label="P10-P90")
    ax.plot(xs, [100 * q["p50"] for q in qs], marker=marker, color="tab:blue", label="P50")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("ETTR (%)")
    ax.grid(True, alpha=0.3)
    return fig, ax
