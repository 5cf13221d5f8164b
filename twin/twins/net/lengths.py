"""Cable lengths by link id for the network twin (:func:`cable_lengths`), read off the cabling pass."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np


class PlanLengths(Mapping):
    """The stock length (m) of each cable of a cable plan by its link id, looked up where the id is asked for:
    the plan's ids are its cables in order, ``L`` and a number from 1 (``L000017``: the 17th), so an id's place
    is read off the id and checked against the plan (any other id is looked up in a table of every id, made on
    first need). A network twin of 288 GPUs on the 2-plane gigawatt site reads ~600 of its 3.4M cables; a table
    of them all took ~1 CPU s per compile. NaN (a fabric-only study's links) reads as 0: no propagation delay."""

    def __init__(self, ids, metres: np.ndarray):
        self._ids, self._m, self._table = ids, metres, None

    def _place(self, key) -> int:
        ids = self._ids
        if type(key) is str and key[:1] == "L" and key[1:].isdigit():
            i = int(key[1:]) - 1
            if 0 <= i < len(ids) and ids[i] == key:
                return i
        if self._table is None:
            self._table = {str(k): i for i, k in enumerate(ids)}
        return self._table.get(str(key), -1)

    def __getitem__(self, key) -> float:
        i = self._place(key)
        if i < 0:
            raise KeyError(key)
        v = float(self._m[i])
        return 0.0 if v != v else v

    def __contains__(self, key) -> bool:
        return self._place(key) >= 0

    def __iter__(self) -> Iterator[str]:
        return map(str, self._ids)

    def __len__(self) -> int:
        return len(self._ids)


def cable_lengths(design, few: bool = False) -> Mapping[str, float]:
    """Cable length by link id from the cabling pass: the ordered stock length (the signal runs the
    whole cable, coiled slack included). Accepts a CablePlan (``ids`` + arrays) or a mapping. ``few``: the
    caller reads few of them (a subfabric): looked up by id (:class:`PlanLengths`), not a table of all."""
    cab = design.cabling
    if cab is None:
        return {}
    ids = getattr(cab, "ids", None)
    if ids is not None:
        arr = getattr(cab, "stock", None)
        if arr is None:
            arr = cab.length
        arr = np.asarray(arr, float)
        if few:
            return PlanLengths(ids, arr)
        # a fabric-only study's links have no length (NaN): no propagation delay is counted for them
        return {k: (0.0 if v != v else v) for k, v in zip(map(str, ids), arr.tolist())}
    cables = getattr(cab, "cables", cab)
    out: dict[str, float] = {}
    for key, c in cables.items():
        length = c.get("length") if isinstance(c, dict) else getattr(c, "length", None)
        if length is not None:
            out[str(key)] = float(length)
    return out
