"""PNG plots of the power twin: the draw at three zooms, the spectrum with the limit bands, throughput
against outdoor temperature."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from twin.emit.pic_power import band_of, log_binned
from twin.emit.png import save_png


def write_power_plots(views: dict, data: dict, out_dir: str | Path, limits=None) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    t, z = views["zoom"]
    fig, axes = plt.subplots(3, 1, figsize=(7.2, 8.0))
    axes[0].plot(t - t[0], z / 1e6, lw=0.8)
    axes[0].set_title(f"IT load over a few {data['job']['step_s']:.2f}-s steps (millisecond bins)")
    axes[0].set_xlabel("s")
    axes[1].plot(views["seconds"] / 3600, views["sec"] / 1e6, lw=0.4)
    axes[1].set_title("grid draw, one-second means")
    axes[1].set_xlabel("h")
    axes[2].plot(views["minutes"] / 3600, views["min"] / 1e6, lw=0.8)
    axes[2].set_title("grid draw, one-minute means")
    axes[2].set_xlabel("h")
    for a in axes:
        a.set_ylabel("MW")
        a.grid(True, alpha=0.3)
    files.append(save_png(fig, out / "power-draw.png"))
    f, ms = views["f"], views["ms"]
    fig, ax = plt.subplots(figsize=(7.2, 4.0))
    edges = np.geomspace(max(f[0], 1e-4), f[-1], 400)
    fb, amp = log_binned(f, ms)  # the same bins as the report's power-spectrum.svg
    ax.loglog(fb, amp / 1e6, lw=0.8)
    for lim in data.get("limits", []):
        if lim["kind"] == "oscillation":
            lo, hi = band_of(lim["limit"])
            if lo is not None:
                ax.axvspan(max(lo, edges[0]), hi, color="tab:red", alpha=0.1)
                ax.hlines(lim["limit_value"] / 1e6, max(lo, edges[0]), hi, color="tab:red")
    ax.axvline(data["spectrum"]["step_frequency_Hz"], color="k", lw=0.6, ls="--")
    ax.set_xlabel("frequency (Hz)")
    ax.set_ylabel("amplitude per log bin (MW)")
    ax.set_title("spectrum of the grid draw (shaded: limit bands; dashed: 1 / step)")
    files.append(save_png(fig, out / "power-spectrum.png"))
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.scatter(views["t_out"], 100 * views["throughput"], s=8)
    ax.set_xlabel("outdoor temperature (degC)")
    ax.set_ylabel("job throughput (% of unthrottled)")
    ax.set_title("throughput against outdoor temperature")
    ax.grid(True, alpha=0.3)
    files.append(save_png(fig, out / "power-throughput-vs-temperature.png"))
    return files
