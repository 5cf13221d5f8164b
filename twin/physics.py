"""Physical constants every pass and twin shares (SI units), each with its source.

>>> round(FIBER_DELAY_S_PER_M * 1000 * 1e6, 1)   # one km of fiber, in microseconds
4.9
>>> pfc_xoff(400e9, 100.0, 9216)   # 400G, 100 m, jumbo frames: the xoff of a 100 m lossless profile
142432
"""

from __future__ import annotations

# Light in silica fiber (group index ~1.47): 4.9 ns per metre, ~5 us per km (ITU-T G.652 fiber; the
# usual rule of thumb). Twinax DAC propagates at ~0.7-0.8 c, close enough at rack lengths.
FIBER_DELAY_S_PER_M = 4.9e-9

# Forwarding latency of a switch the catalog gives no figure for (assumed: cut-through ASIC ~1 us).
DEFAULT_SWITCH_LATENCY_S = 1e-6

# Water at 25 degC and 1 atm ([nist-water]): density 997.05 kg/m^3, isobaric heat capacity 75.33 J/(mol K) /
# 18.015 g/mol = 4,181.6 J/(kg K). A coolant loop carries flow x density x heat capacity x its temperature rise;
# 1 kW at a 10 K rise needs 1.44 L/min. Glycol mixtures carry less (a PG25 loop about 4% less per litre).
WATER_DENSITY = 997.05  # kg/m^3
WATER_HEAT_CAPACITY = 4181.6  # J/(kg K)

U_METRES = 0.04445  # one rack unit (EIA-310: 1.75 in)

# PFC headroom ([ieee-802.1qbb]). After a port sends PAUSE, the sender keeps transmitting until the frame
# reaches it and it reacts: a round trip of the cable at line rate, plus its response (assumed 1.5 us:
# MAC/PHY processing and the pause quanta's granularity), plus one maximum frame finishing at each end.
PFC_RESPONSE_S = 1.5e-6  # assumed
HEADROOM_SHARE = 0.25  # assumed: the share of a switch's packet buffer that may be lossless headroom


def pfc_xoff(speed: float, length_m: float, mtu: int) -> int:
    """Bytes a lossless priority must absorb after sending PAUSE on a link of ``length_m`` at ``speed``
    bit/s: ``speed/8 x (2 x length x 4.9 ns/m + response) + 2 x MTU``."""
    return round(speed / 8 * (2 * length_m * FIBER_DELAY_S_PER_M + PFC_RESPONSE_S)) + 2 * mtu


def lossless_reach(speed: float, per_port_bytes: float, mtu: int) -> float:
    """The cable length (m) at which one port's xoff fills ``per_port_bytes``: where lossless stops fitting.

    >>> round(lossless_reach(400e9, 142432, 9216))   # the inverse of pfc_xoff
    100
    """
    return max(0.0, ((per_port_bytes - 2 * mtu) / (speed / 8) - PFC_RESPONSE_S) / (2 * FIBER_DELAY_S_PER_M))
