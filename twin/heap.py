"""Large buffers reused instead of mapped afresh: a pass that makes many arrays of tens of MB (the power twin's
8.64 M-sample series at 10 ms over a day, each check and each probe of a bisection a new one) keeps them on
the heap while it runs.

Why: glibc's malloc maps every block above its mmap threshold (at most 32 MiB, however it adapts) with a fresh
``mmap`` and unmaps it on free, so each 69 MB array is faulted in page by page again: on meta-24k-roce's power
scenario the kernel's share was 11-16 s of a 28-36 s run. :func:`reuse_large_buffers` raises the threshold (and
the trim threshold) for the duration of a pass, then sets both back to the values glibc's own adaptation tops
out at (``DEFAULT_MMAP_THRESHOLD_MAX``, twice that for trimming) and hands the freed heap back to the system
(``malloc_trim``). Results are unchanged (the same arithmetic on the same values); only where the bytes live
differs. Elsewhere than glibc (no ``mallopt``) it does nothing.
"""

from __future__ import annotations

import ctypes
import gc
import resource
from collections.abc import Iterator
from contextlib import contextmanager

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
DURING = 1 << 30  # blocks up to 1 GiB from the heap while the pass runs
AFTER_MMAP = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: where its own adaptation stops
AFTER_TRIM = 2 * AFTER_MMAP  # glibc sets the trim threshold to twice the mmap threshold as it adapts


def _libc():
    """The C library already loaded in this process (its symbols, no search for a file), if it has glibc's
    ``mallopt`` and ``malloc_trim``; else None."""
    try:
        lib = ctypes.CDLL(None)
    except OSError:
        return None
    return lib if hasattr(lib, "mallopt") and hasattr(lib, "malloc_trim") else None


@contextmanager
def reuse_large_buffers() -> Iterator[bool]:
    """Within the block, large blocks come from the heap and freed ones are reused; yields whether it could."""
    lib = _libc()
    if lib is None:
        yield False
        return
    lib.mallopt(M_MMAP_THRESHOLD, DURING)
    lib.mallopt(M_TRIM_THRESHOLD, DURING)
    try:
        yield True
    finally:
        lib.mallopt(M_MMAP_THRESHOLD, AFTER_MMAP)
        lib.mallopt(M_TRIM_THRESHOLD, AFTER_TRIM)
        lib.malloc_trim(0)


LARGE_KIB = 2 << 20  # peak RSS (KiB: 2 GiB) past which a build binds on memory before time


def large() -> bool:
    """This process has held more than 2 GiB: a build where memory binds before time (gigawatt-campus, not
    meta-campus-100k). twin.build then orders its emitters to keep the heaviest apart and trims between them."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > LARGE_KIB


def trim() -> None:
    """Hand the freed heap back to the operating system (glibc keeps freed arenas mapped: ~150 MB after the
    24K-GPU default run, which the emitters' own peak would sit on). Elsewhere a no-op."""
    lib = _libc()
    if lib is not None:
        lib.malloc_trim(0)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused for the block, as it was after: for a pass that builds millions of
    small containers, none cyclic, where every collection it would trigger rescans what is already built (the
    fabric graph under it)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
