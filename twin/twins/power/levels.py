"""The power tree over time: racks against their power shelf, busways and UPS blocks against their
ratings in every failure state (2N: a feed lost; N+1: a UPS block lost), halls against their utility;
in a hall with CDUs, each row's liquid heat (the GPU racks' liquid share) against its CDUs in normal
operation and after the loss of one CDU or pump, and the hall's against its facility water.

The distribution limits are the placement's own (:func:`twin.compiler.place.capacity.hall_limits`): a busway
carries half its row normally and the whole row after its partner feed is lost; an N+1 block carries
its rows and the reserve block takes a failed block's rows. Two checks per limit: the instantaneous
peak (the transient a step or a restart puts on the busway, exact from the trace's phase levels)
against the nameplate rating, and the largest one-minute mean against the derated (continuous) rating.
"""

from __future__ import annotations

import numpy as np

from twin.compiler.place.capacity import hall_limits
from twin.compiler.resolve.liquid import liquid_share
from twin.twins.power.trace import bin_average, extremes

CONTINUOUS_WINDOW = 60.0  # s: a breaker's continuous-load view of the busway (assumed)


def rolling_max_mean(x: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Largest mean over ``m`` consecutive samples of each row of ``x`` and the index where that window starts.

    >>> v, i = rolling_max_mean(np.array([[1.0, 3.0, 5.0, 1.0], [2.0, 2.0, 2.0, 2.0]]), 2)
    >>> v.tolist(), i.tolist()
    ([4.0, 2.0], [1, 0])
    """
    x = np.atleast_2d(x)
    if x.shape[1] <= m:
        return x.mean(axis=1), np.zeros(len(x), np.int64)
    c = np.concatenate([np.zeros((len(x), 1)), np.cumsum(x, axis=1)], axis=1)
    means = (c[:, m:] - c[:, :-m]) / m
    i = means.argmax(axis=1)
    return means[np.arange(len(x)), i], i


def continuous(segs, dt_s: float, n_s: int, W: np.ndarray, m: int, chunk: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """The largest ``m``-second mean of each weight row of ``W`` and where its window starts. The series
    are linear in the weights: each distinct row is drawn once, from the channels' per-second means,
    ``chunk`` rows at a time (a campus's thousands of busways are a few distinct loads)."""
    basis = bin_average(segs, 0.0, dt_s, n_s, np.eye(W.shape[1]))  # (channels x seconds)
    uniq, inv = np.unique(W, axis=0, return_inverse=True)
    best, at = np.empty(len(uniq)), np.empty(len(uniq), np.int64)
    for a in range(0, len(uniq), chunk):
        best[a:a + chunk], at[a:a + chunk] = rolling_max_mean(uniq[a:a + chunk] @ basis, m)
    inv = np.ravel(inv)
    return best[inv], at[inv]


def distribution(design, tree, segs, duration: float, pue: float) -> dict:
    """Busway and block verdicts per hall and failure state, rack peaks, hall peaks."""
    spec = design.spec
    n_s = max(1, int(duration))
    dt_s = duration / n_s
    m = max(1, int(round(CONTINUOUS_WINDOW / dt_s)))
    share = liquid_share(spec.site)
    n_gpu = int((tree.rack_W[:, : tree.ch.stages].sum(axis=1) + tree.rack_W[:, tree.ch.other_gpu] > 0).sum())
    gpu_row_W = np.zeros_like(tree.row_W)  # the GPU racks of each row (racks list GPU racks first)
    row_index = {hr: i for i, hr in enumerate(tree.rows)}
    for k in range(n_gpu):
        gpu_row_W[row_index[tree.rack_pos[k]]] += tree.rack_W[k]
    if not share:
        gpu_row_W[:] = 0.0
    found = []  # (hall, its limits, their weight rows)
    for h in spec.site.halls:
        idx = tree.hall_rows(h.name)
        if not idx:
            continue
        lims = [L for L in hall_limits(h, pue, share) if L.kind in ("busway", "block", "cdu", "facility-water")]
        if not lims:
            continue
        zero = np.zeros(tree.ch.n)
        found.append((h, lims, np.stack([L.coef * sum((tree.row_W[idx[r]] for r in L.rows if r in idx), zero)
                                         + L.gpu_coef * sum((gpu_row_W[idx[r]] for r in L.rows if r in idx), zero) for L in lims])))
    Wall = np.concatenate([w for _, _, w in found]) if found else np.zeros((0, tree.ch.n))
    ex = extremes(segs, Wall)
    cont, at = continuous(segs, dt_s, n_s, Wall, m) if len(Wall) else (np.zeros(0), np.zeros(0, np.int64))
    checks, worst = [], {}
    k = 0
    for h, lims, _ in found:
        for L in lims:
            rating = L.capacity / (h.power.derating or 1.0) if L.kind in ("busway", "block") else L.capacity
            rec = {"hall": h.name, "limit": L.name, "state": L.state, "peak_W": float(ex["max"][k]), "peak_at_s": float(ex["max_at"][k]),
                   "rating_W": rating, "continuous_W": float(cont[k]), "continuous_at_s": int(at[k]) * dt_s, "derated_W": L.capacity,
                   "peak_ok": bool(ex["max"][k] <= rating * (1 + 1e-9)), "continuous_ok": bool(cont[k] <= L.capacity * (1 + 1e-9))}
            rec["utilisation"] = max(rec["peak_W"] / rating if rating else np.inf, rec["continuous_W"] / L.capacity if L.capacity else np.inf)
            checks.append(rec)
            key = (h.name, L.state)
            if key not in worst or rec["utilisation"] > worst[key]["utilisation"]:
                worst[key] = rec
            k += 1
    rack_ex = extremes(segs, tree.rack_W)
    gpu_racks = int((tree.rack_W[:, : tree.ch.stages].sum(axis=1) + tree.rack_W[:, tree.ch.other_gpu] > 0).sum())
    shelf = spec.rack_type.power_shelf
    hall_1s = bin_average(segs, 0.0, dt_s, n_s, tree.hall_W)
    hall_ex = extremes(segs, tree.hall_W)
    halls = []
    for i, name in enumerate(tree.halls):
        h = next(x for x in spec.site.halls if x.name == name)
        halls.append({"hall": name, "peak_W": float(hall_ex["max"][i]), "trough_W": float(hall_ex["min"][i]),
                      "mean_W": float(hall_1s[i].mean()), "facility_peak_W": float(hall_ex["max"][i] * pue), "utility_W": h.power.utility,
                      "utility_ok": bool(hall_ex["max"][i] * pue <= h.power.utility)})
    return {
        "worst_by_state": sorted(worst.values(), key=lambda r: (r["hall"], r["state"])),
        "limits": checks,
        "failing": [r for r in checks if not (r["peak_ok"] and r["continuous_ok"])][:50],
        "limits_checked": len(checks),
        "limits_failing": sum(not (r["peak_ok"] and r["continuous_ok"]) for r in checks),
        "racks": {"gpu_racks": gpu_racks, "peak_W": float(rack_ex["max"][:gpu_racks].max()) if gpu_racks else 0.0,
                  "trough_W": float(rack_ex["min"][:gpu_racks].min()) if gpu_racks else 0.0, "power_shelf_W": shelf,
                  "over_shelf": int((rack_ex["max"][:gpu_racks] > shelf).sum())},
        "halls": halls,
        "halls_1s": hall_1s,
    }
