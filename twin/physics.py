"""Physical constants every pass and twin shares (SI units), each with its source.

>>> round(FIBER_DELAY_S_PER_M * 1000 * 1e6, 1)   # one km of fiber, in microseconds
4.9
"""

from __future__ import annotations

# Light in silica fiber (group index ~1.47): 4.9 ns per metre, ~5 us per km (ITU-T G.652 fiber; the
# usual rule of thumb). Twinax DAC propagates at ~0.7-0.8 c, close enough at rack lengths.
FIBER_DELAY_S_PER_M = 4.9e-9

# Forwarding latency of a switch the catalog gives no figure for (assumed: cut-through ASIC ~1 us).
DEFAULT_SWITCH_LATENCY_S = 1e-6

U_METRES = 0.04445  # one rack unit (EIA-310: 1.75 in)
