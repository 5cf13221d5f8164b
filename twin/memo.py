"""A function of live objects computed once: the last call's result, kept while its arguments live.

The report, its pictures, review.json and the verdicts each ask for the same design's figures (PFC
headroom, bisection); :func:`last_call` lets the first ask compute them and the others read the result.
The arguments are held by weak references and compared by identity, so a new design is never given
an old design's figures and a finished build's design is not kept alive by the cache.

>>> class Box:
...     pass
>>> calls = []
>>> @last_call
... def size(box):
...     calls.append(box)
...     return len(calls)
>>> a, b = Box(), Box()
>>> size(a), size(a), size(b), size(a)
(1, 1, 2, 3)
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import TypeVar

R = TypeVar("R")


def last_call(fn: Callable[..., R]) -> Callable[..., R]:
    """``fn`` of weakly referenceable positional arguments, computed again only when any argument is
    another object than the last call's. The result is shared: callers read it and never change it."""
    last: list = []  # [weak references of the arguments, result]

    @functools.wraps(fn)
    def wrapper(*args):
        if last and len(last[0]) == len(args) and all(r() is a for r, a in zip(last[0], args)):
            return last[1]
        result = fn(*args)
        last[:] = [[weakref.ref(a) for a in args], result]
        return result

    return wrapper
