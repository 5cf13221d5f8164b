"""An AI zone's CTSW and ATSW counts when a site leaves them out: the smallest counts whose ports carry
the links and split every lower switch's uplinks evenly. Filled in once when the spec is resolved
(:func:`with_counts`), so every pass, :mod:`twin.compiler.resolve.shape` included, reads the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from twin.compiler.resolve.shape import rtsw_uplinks
from twin.compiler.resolve.zone_links import ctsw_downlinks

if TYPE_CHECKING:
    from twin.compiler.resolve.spec import Spec


def ai_zone_counts(spec: Spec) -> tuple[int, int | None]:
    """(CTSWs per zone, ATSWs) when the spec leaves them out: the smallest counts at or above the
    fewest whose ports carry the links that split every lower switch's uplinks evenly (each RTSW's
    over the zone's CTSWs; each CTSW's over the ATSWs of its plane); the fewest when none does.

    meta-24k-roce without counts (192 racks of 16 uplinks at 1:7, 576-port CTSWs and ATSWs): 6 CTSWs
    would need 512 + 74 ports, 7 need 439 + 63 <= 576, and 8 is the first count that divides 16: 8
    CTSWs of 384 down, ceil(384 / 7) = 55 up. 8 zones x 8 x 55 = 3,520 uplinks need 7 ATSWs, but
    gcd(8, 7) = 1 puts all 7 in one plane and 55 is no multiple of 7; 8 ATSWs make 8 planes of one:
    CTSW j of every zone sends its 55 links to ATSW j (440 of 576 ports).
    """
    f = spec.fabric
    ctsw = spec.switch(f.ctsw.model)
    rtsw = spec.rtsw_model
    per_rack = max(1, spec.rack_type.rtsw_count)
    up = rtsw_uplinks(spec)
    L = spec.racks_per_zone * up * per_rack
    up_speed = min(rtsw.port_speed, ctsw.port_speed)
    ratio = (f.atsw.oversubscription or 1.0) if f.atsw is not None and spec.zones > 1 else None
    atsw = spec.switch(f.atsw.model) if ratio else None
    a_speed = min(ctsw.port_speed, atsw.port_speed) if atsw else up_speed
    c = f.ctsw.count
    if c is None:
        def fits(n: int) -> bool:
            d = math.ceil(L / n)
            return d + (math.ceil(d * up_speed / (ratio * a_speed) - 1e-9) if ratio else 0) <= ctsw.ports
        lo, hi = 1, max(1, L)  # fits() only gets easier with more CTSWs: bisect for the fewest
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if fits(mid) else (mid + 1, hi)
        c = next((n for n in range(lo, up + 1) if up % n == 0), lo)
    if not ratio or f.atsw.count is not None:
        return c, (f.atsw.count if ratio else None)
    cup = [math.ceil(d * up_speed / (ratio * a_speed) - 1e-9) for d in ctsw_downlinks(L, c)]
    least = max(1, math.ceil(spec.zones * sum(cup) / atsw.ports))
    shares = set(cup)  # at most two values (CTSW downlinks differ by one at most)
    for a in range(least, least + 10_000):  # a = c always qualifies (planes of one ATSW)
        plane = a // math.gcd(c, a)
        if all(u % plane == 0 for u in shares):
            return c, a
    return c, least


def with_counts(spec: Spec) -> Spec:
    """``spec`` with an AI zone's CTSW and ATSW counts filled in where the site leaves them out
    (:func:`ai_zone_counts`), so that every pass reads the same numbers; other families unchanged."""
    f = spec.fabric
    if not spec.family.zoned or f.ctsw is None or f.ctsw.model is None or spec.rtsw_model is None:
        return spec
    if f.ctsw.count is not None and (f.atsw is None or f.atsw.count is not None):
        return spec
    c, a = ai_zone_counts(spec)
    update = {"ctsw": f.ctsw.model_copy(update={"count": c})}
    if f.atsw is not None and a is not None:
        update["atsw"] = f.atsw.model_copy(update={"count": a})
    site = spec.site.model_copy(update={"fabric": f.model_copy(update=update)})
    return replace(spec, site=site)
