"""The optimal traffic-engineered split: a reference no hash can beat.

Why an LP: Meta's centralised TE (CSPF every ~30 s) was 5-10% better than E-ECMP on small jobs; to
say how far a scheme is from the best any routing could do, we solve the min-max link utilisation
multicommodity flow on the switch-level demand (transfers aggregated per source and destination
leaf, one commodity per destination leaf):

    minimise U  s.t.  flow conservation per (destination, switch),  sum_t x[t, a] <= U * cap[a]

U (seconds for the phase's bytes) is then the time at which every transfer can finish together. The
NIC and NVLink arcs are not routable, so their load / capacity is a hard lower bound added by max.
HiGHS (scipy.optimize.linprog) solves it; we refuse problems above :data:`MAX_VARIABLES`, since the
reference is meant for small cases (a zone or a handful of racks).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix

from twin.twins.net import planes, relays, routing
from twin.twins.net.topology import Net

MAX_VARIABLES = 1_500_000


def phase_time(net: Net, src: np.ndarray, dst: np.ndarray, frac: np.ndarray, cap: np.ndarray):
    """(seconds per byte of S, path latency, routed NIC/NVLink part) of one phase under optimal TE."""
    r = routing.route(net, src, dst, frac, routing.Scheme("te", "spray", 1))
    load = routing.link_load(net, r)
    S = net.n_switches
    fixed = np.ones(net.n_arcs, bool)
    sw = (net.arc_tail >= 0) & (net.arc_tail < S) & (net.arc_head >= 0) & (net.arc_head < S)
    fixed[sw] = False
    with np.errstate(divide="ignore", invalid="ignore"):
        t_fixed = float(np.max(np.where(fixed & (cap > 0), load / cap, 0.0), initial=0.0))
    src, dst, frac = np.asarray(src), np.asarray(dst), np.asarray(frac, float)
    netw = net.gpu_server[src] != net.gpu_server[dst]
    rel = relays.relays(net, src[netw], dst[netw])  # rail-only: the network leg starts at the relay
    _, s_nic, d_nic, b = planes.split(net, np.where(rel >= 0, rel, src[netw]), dst[netw], frac[netw])  # per plane
    s_leaf, d_leaf = net.nic_leaf[s_nic], net.nic_leaf[d_nic]
    cross = s_leaf != d_leaf
    lat = float(r.latency.max()) if len(r.latency) else 0.0
    if not cross.any():
        return t_fixed, lat, r
    s_leaf, d_leaf, b = s_leaf[cross], d_leaf[cross], b[cross]
    dests, dinv = np.unique(d_leaf, return_inverse=True)
    K = len(dests)
    arcs = np.flatnonzero(sw & (cap > 0))
    A_n = len(arcs)
    nvar = K * A_n + 1
    if nvar > MAX_VARIABLES:
        raise ValueError(f"TE reference needs {nvar:,} LP variables (limit {MAX_VARIABLES:,}); use it on a smaller case")
    # HiGHS works to ~1e-7 absolute: solve in units of the largest demand and the largest capacity
    b_scale = float(b.max())
    c_scale = float(cap[arcs].max())
    b = b / b_scale
    supply = np.zeros((K, S))
    np.add.at(supply, (dinv, s_leaf), b)
    np.add.at(supply, (dinv, dests[dinv]), -b)
    tails, heads = net.arc_tail[arcs], net.arc_head[arcs]
    # equality rows (k, u): +x[k, a] for arcs leaving u, -x[k, a] for arcs entering u
    k_idx = np.repeat(np.arange(K), A_n)
    a_idx = np.tile(np.arange(A_n), K)
    var = k_idx * A_n + a_idx
    rows = np.concatenate([k_idx * S + tails[a_idx], k_idx * S + heads[a_idx]])
    cols = np.concatenate([var, var])
    vals = np.concatenate([np.ones(len(var)), -np.ones(len(var))])
    A_eq = coo_matrix((vals, (rows, cols)), shape=(K * S, nvar)).tocsr()
    b_eq = supply.reshape(-1)
    # capacity rows: sum_k x[k, a] - cap[a] U <= 0
    cap_rows = coo_matrix((np.ones(len(var)), (a_idx, var)), shape=(A_n, nvar))
    u_col = coo_matrix((-cap[arcs] / c_scale, (np.arange(A_n), np.full(A_n, nvar - 1))), shape=(A_n, nvar))
    A_ub = (cap_rows + u_col).tocsr()
    c = np.zeros(nvar)
    c[-1] = 1.0
    from scipy.optimize import linprog  # scipy.optimize is ~170 modules: loaded only when a TE split is asked for

    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(A_n), A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status != 0:
        raise ValueError(f"TE LP failed: {res.message}")
    return max(t_fixed, float(res.x[-1]) * b_scale / c_scale), lat, r

