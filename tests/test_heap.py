"""twin/heap.py: inside reuse_large_buffers a 64 MB array comes from the process's heap, where a freed one is reused
by the next; outside it (before and after) glibc maps each one afresh with mmap, and the kernel zeroes and faults
in its pages again, which was the kernel time of the power twin's day-long series. Read off /proc/self/maps: the
array's first byte lies in the [heap] mapping or not. Where the C library has no mallopt the context does nothing
and says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from twin import heap

MB64 = 8 << 20  # float64 elements in 64 MiB: above glibc's largest mmap threshold (32 MiB)


def _on_heap(a: np.ndarray) -> bool:
    """Whether the array's data lies in the [heap] mapping (brk), not in a mapping of its own."""
    addr = a.ctypes.data
    for line in Path("/proc/self/maps").read_text().splitlines():
        if line.endswith("[heap]"):
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= addr < hi:
                return True
    return False


CHECK = """
import numpy as np
from twin import heap
from test_heap import MB64, _on_heap
assert not _on_heap(np.ones(MB64))
with heap.reuse_large_buffers() as applied:
    assert applied
    a = np.ones(MB64)
    first = a.ctypes.data
    assert _on_heap(a)
    del a
    b = np.ones(MB64)
    assert _on_heap(b) and b.ctypes.data == first  # the freed block is reused, not mapped again
    del b
assert not _on_heap(np.ones(MB64))  # the thresholds are set back afterwards
assert _on_heap(np.ones(1 << 20))  # an 8 MB array is below the threshold set back (32 MiB): heap, as glibc adapts to
"""


def test_large_buffers_come_from_the_heap_inside_and_their_own_mapping_outside():
    """In a fresh process: where an array lands depends on the heap's free blocks, which the tests that ran
    before in this one leave behind (a free block of the heap large enough is reused whatever the threshold)."""
    import os
    import subprocess
    import sys

    if heap._libc() is None or not Path("/proc/self/maps").exists():
        pytest.skip("no glibc mallopt or no /proc here: reuse_large_buffers does nothing")
    here = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here), str(here.parent)])}
    p = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
