"""ECMP hashing of RoCEv2 flows, vectorised over all flows at once.

Why model the hash at all: ECMP collisions are the whole difference between "the fabric is 1:1" and
"the job gets 70% of its bandwidth". A switch hashes each packet's header fields and takes the result
modulo the group size; every packet of a queue pair has the same fields, so a QP is pinned to one path.
RoCEv2 derives the UDP source port from the QP numbers (Linux ``rdma_calc_flow_label`` and
``rdma_flow_label_to_udp_sport``), which is the only per-QP entropy a plain 5-tuple hash sees;
E-ECMP also hashes the destination QP from the InfiniBand BTH header.

Each switch hashes with its own seed (as real ASICs are configured, to avoid polarisation); setting
``per_switch=False`` gives every switch the same function, a what-if that shows polarisation.

>>> import numpy as np
>>> int(roce_udp_sport(np.array([0x11]), np.array([0x22]))[0]) >= 0xC000
True
"""

from __future__ import annotations

import numpy as np

U64 = np.uint64
_M1 = U64(0xBF58476D1CE4E5B9)
_M2 = U64(0x94D049BB133111EB)
_P1 = U64(0x9E3779B97F4A7C15)
ROCE_UDP_DPORT = 4791
UDP_PROTO = 17

FIELDS = ("src-ip", "dst-ip", "protocol", "src-port", "dst-port", "flow-label", "roce-dst-qp")


def fmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 / xxhash-style avalanche: every input bit flips about half the output bits."""
    x = np.asarray(x, dtype=U64)
    with np.errstate(over="ignore"):
        x = x ^ (x >> U64(30))
        x = x * _M1
        x = x ^ (x >> U64(27))
        x = x * _M2
        x = x ^ (x >> U64(31))
    return x


def _crc_table() -> np.ndarray:
    t = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        t = np.where(t & 1, (t >> np.uint32(1)) ^ np.uint32(0xEDB88320), t >> np.uint32(1))
    return t.astype(np.uint32)


_CRC = _crc_table()


def crc32_words(words: list[np.ndarray], seed: int = 0) -> np.ndarray:
    """CRC-32 (IEEE, reflected) over the little-endian 32-bit words of each flow: the hash family
    many switch ASICs offer. Table-driven, one numpy pass per byte."""
    n = len(words[0]) if words else 0
    crc = np.full(n, np.uint32(~np.uint32(seed & 0xFFFFFFFF)), dtype=np.uint32)
    for w in words:
        w = np.asarray(w).astype(np.uint64) & U64(0xFFFFFFFF)
        for b in range(4):
            byte = ((w >> U64(8 * b)) & U64(0xFF)).astype(np.uint32)
            crc = _CRC[(crc ^ byte) & np.uint32(0xFF)] ^ (crc >> np.uint32(8))
    return ~crc


def roce_udp_sport(lqpn: np.ndarray, rqpn: np.ndarray) -> np.ndarray:
    """UDP source port of a RoCEv2 QP, as Linux computes it from the local and remote QP numbers."""
    with np.errstate(over="ignore"):
        v = np.asarray(lqpn, U64) * np.asarray(rqpn, U64)
        v = v ^ (v >> U64(20))
        v = v ^ (v >> U64(40))
        fl = v & U64(0xFFFFF)
    low = (fl & U64(0x3FFF)) ^ ((fl & U64(0xFC000)) >> U64(14))
    return (low | U64(0xC000)).astype(np.int64)


def flow_fields(src_nic: np.ndarray, dst_nic: np.ndarray, qp: np.ndarray) -> dict[str, np.ndarray]:
    """Header fields of each QP flow. QP numbers are deterministic, 0x100 + 256 * peer NIC + QP index
    (up to 256 QPs per NIC pair: channels x QPs per connection), so a re-run gives the same hashes."""
    src_nic = np.asarray(src_nic, np.int64)
    dst_nic = np.asarray(dst_nic, np.int64)
    qp = np.asarray(qp, np.int64)
    lqpn = 0x100 + 256 * dst_nic + qp
    rqpn = 0x100 + 256 * src_nic + qp
    ip = lambda nic: (10 << 24) + nic  # noqa: E731 - one /8 of host addresses, unique per NIC
    return {
        "src-ip": ip(src_nic),
        "dst-ip": ip(dst_nic),
        "protocol": np.full_like(src_nic, UDP_PROTO),
        "src-port": roce_udp_sport(lqpn, rqpn),
        "dst-port": np.full_like(src_nic, ROCE_UDP_DPORT),
        "flow-label": np.zeros_like(src_nic),
        "roce-dst-qp": rqpn & 0xFFFFFF,
    }


def base_hash(fields: dict[str, np.ndarray], use: list[str], function: str = "xxmix", seed: int = 0) -> np.ndarray:
    """One 64-bit value per flow from the chosen header fields (the per-switch seed is mixed in later)."""
    words = [fields[f] for f in FIELDS if f in use]
    if function == "crc32":
        return crc32_words(words, seed).astype(U64)
    if function != "xxmix":
        raise ValueError(f"unknown hash function {function!r}; expected xxmix or crc32")
    n = len(next(iter(fields.values())))
    h = np.full(n, U64(seed) ^ _P1, dtype=U64)
    with np.errstate(over="ignore"):
        for w in words:
            h = fmix64(h ^ (np.asarray(w).astype(U64) * _P1))
    return h


PER_TRANSFER = frozenset({"src-ip", "dst-ip", "protocol", "dst-port", "flow-label"})  # the same for every QP of a NIC pair


def transfer_hash(s_nic: np.ndarray, d_nic: np.ndarray, qps: int, use: list[str], function: str = "xxmix", seed: int = 0) -> np.ndarray:
    """:func:`base_hash` of the flows QP 0..qps-1 of each NIC pair (transfer-major), with the mixing of
    the leading fields that every QP of a pair shares (its addresses, the protocol) done once per
    pair: the same values, a few passes over the flows fewer."""
    s_nic = np.asarray(s_nic, np.int64)
    d_nic = np.asarray(d_nic, np.int64)
    used = [f for f in FIELDS if f in use]
    lead = next((i for i, f in enumerate(used) if f not in PER_TRANSFER), len(used))
    if function != "xxmix" or lead == 0:
        return base_hash(flow_fields(np.repeat(s_nic, qps), np.repeat(d_nic, qps), np.tile(np.arange(qps), len(s_nic))),
                         use, function, seed)
    pair = flow_fields(s_nic, d_nic, np.zeros(len(s_nic), np.int64))  # the per-pair fields do not read the QP
    h = base_hash(pair, used[:lead], function, seed)
    rest = used[lead:]
    if not rest:
        return np.repeat(h, qps)
    # the rest as (pairs, QPs) arrays, each field as flow_fields computes it (per-pair ones broadcast)
    qp = np.arange(qps)[None, :]
    lqpn = 0x100 + 256 * d_nic[:, None] + qp
    rqpn = 0x100 + 256 * s_nic[:, None] + qp
    per_qp = {"src-port": lambda: roce_udp_sport(lqpn, rqpn), "roce-dst-qp": lambda: rqpn & 0xFFFFFF}
    h = np.repeat(h, qps).reshape(len(s_nic), qps)
    with np.errstate(over="ignore"):
        for f in rest:
            w = per_qp[f]() if f in per_qp else pair[f][:, None]
            h = fmix64(h ^ (np.asarray(w).astype(U64) * _P1))
    return h.reshape(-1)


def switch_seeds(n_switches: int, seed: int = 1, per_switch: bool = True) -> np.ndarray:
    """The hash seed each switch is configured with."""
    ids = np.arange(n_switches, dtype=U64) if per_switch else np.zeros(n_switches, U64)
    with np.errstate(over="ignore"):
        return fmix64(ids + U64(seed) * _P1 + U64(1))


def choose(h: np.ndarray, switch_seed: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Member index a switch picks: its seeded mix of the flow hash, modulo the group size."""
    return (fmix64(h ^ switch_seed) % np.asarray(n, U64)).astype(np.int64)
