"""hashing.transfer_hash mixes the header fields every QP of a NIC pair shares once per pair; each flow's
hash must stay the one base_hash gives over flow_fields of that flow (the ECMP choices, and with them
every routed number, depend on it bit for bit)."""

from __future__ import annotations

import itertools

import numpy as np

from twin.twins.net import hashing


def per_flow(s, d, qps, use, function="xxmix", seed=0):
    src, dst = np.repeat(s, qps), np.repeat(d, qps)
    return hashing.base_hash(hashing.flow_fields(src, dst, np.tile(np.arange(qps), len(s))), use, function, seed)


def test_transfer_hash_equals_the_per_flow_hash_for_every_field_subset():
    rng = np.random.default_rng(0)
    s, d = rng.integers(0, 20_000, 200), rng.integers(0, 20_000, 200)
    for qps in (1, 3, 16):
        for r in range(len(hashing.FIELDS) + 1):
            for use in itertools.combinations(hashing.FIELDS, r):
                got = hashing.transfer_hash(s, d, qps, list(use), "xxmix", 7)
                assert got.tobytes() == per_flow(s, d, qps, list(use), "xxmix", 7).tobytes(), (qps, use)
    use = ["src-ip", "dst-ip", "protocol", "src-port", "dst-port"]
    assert hashing.transfer_hash(s, d, 4, use, "crc32", 1).tobytes() == per_flow(s, d, 4, use, "crc32", 1).tobytes()
    # the QPs of one pair differ (the UDP source port carries the QP numbers), so ECMP can spread them
    assert len(np.unique(hashing.transfer_hash(s[:1], d[:1], 16, use))) == 16
