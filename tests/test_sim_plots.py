"""The twin's PNG plots: they exist, are real PNGs of the intended size, show data, and are
byte-identical when written twice (the build's determinism rule covers them too).

Why check pixels: a plot that matplotlib wrote without error can still be empty (no lines, a
histogram of nothing); the busbw plot must have a coloured line per scheme on a white canvas.
"""

from __future__ import annotations

import numpy as np
import pytest

from twin.emit.plots import write_plots
from twin.lang.scenario.models import parse_scenario
from twin.twins.net import synthetic
from twin.twins.run import simulate

Image = pytest.importorskip("PIL.Image")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DPI = 110  # plots.py saves at this resolution
SCENARIO = """
name: plots
routing:
  - {name: ecmp-1qp, scheme: ecmp, qps: 1}
  - {name: spray, scheme: spray}
collectives:
  - {name: ring, op: allreduce, ranks: {gpus: all}, sweep: {min: 1 MiB, max: 256 MiB, factor: 4}}
  - {name: a2a, op: alltoall, ranks: {servers: "1-4"}, sizes: [64 MiB]}
"""


@pytest.fixture(scope="module")
def result():
    g = synthetic.clos(zones=1, racks_per_zone=4, servers_per_rack=2, gpus_per_server=2, ctsw_per_zone=2)
    scn, src = parse_scenario(SCENARIO)
    return simulate(None, scn, src, graph=g)


def test_plots_are_valid_pngs_of_the_intended_size(result, tmp_path):
    files = write_plots(result, tmp_path)
    names = [f.name for f in files]
    # the sweep gets a busbw plot; a single size has no curve to draw, so the a2a gets none
    assert names == ["baseline-ring-busbw.png", "baseline-ring-link-load.png", "baseline-ring-max-mean.png",
                     "baseline-a2a-link-load.png", "baseline-a2a-max-mean.png"]
    sizes = {"busbw": (6.4, 4.0), "link-load": (6.4, 4.0), "max-mean": (6.4, 3.6)}
    for f in files:
        data = f.read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 5_000
        with Image.open(f) as im:
            im.verify()
        with Image.open(f) as im:
            kind = next(k for k in sizes if f.name.endswith(f"-{k}.png"))
            w, h = sizes[kind]
            assert im.format == "PNG" and im.size == (round(w * DPI), round(h * DPI))
            px = np.asarray(im.convert("RGB"))
        # something is drawn: many colours, and not mostly blank
        assert len(np.unique(px.reshape(-1, 3), axis=0)) > 20
        assert (px.min(axis=2) < 200).mean() > 0.01


def test_busbw_plot_draws_one_coloured_line_per_scheme(result, tmp_path):
    f = next(p for p in write_plots(result, tmp_path) if p.name.endswith("-busbw.png"))
    with Image.open(f) as im:
        px = np.asarray(im.convert("RGB")).astype(int)
    # matplotlib's first two cycle colours: tab:blue (31, 119, 180) and tab:orange (255, 127, 14)
    for rgb in ((31, 119, 180), (255, 127, 14)):
        near = (np.abs(px - np.array(rgb)).sum(axis=2) < 30).sum()
        assert near > 200, rgb


def test_plots_are_byte_identical_when_written_twice(result, tmp_path):
    a = write_plots(result, tmp_path / "a")
    b = write_plots(result, tmp_path / "b")
    assert [x.read_bytes() for x in a] == [y.read_bytes() for y in b]
