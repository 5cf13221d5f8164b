"""The collective library's cost model: channels, protocols, and the latency of every step.

A collective's time is bandwidth (from the fluid model: how fast the fabric moves its bytes) plus
latency (how many sequential steps it takes and what each costs). The latency side follows NCCL's
own tuning model (NCCL 2.30 ``src/graph/tuning.cc``, the defaults it ships), with the network part
of every step taken from the design instead of NCCL's fixed figure:

    t(S) = min over protocols p of  base(p) + sum over phases [ intra x nvl(p)
                                        + net x (net(p) + NIC latency + path latency)
                                        + posts x post(p) ]  +  S x (fluid seconds per byte) / (eta x bw(p))

- ``base``: launch and synchronisation per collective (ring 6.6 / 14 / 8.4 us for LL / LL128 /
  Simple; tree 6.8 / 14 / 8.4).
- ``nvl``: per NVLink step (ring 0.6 / 1.9 / 3.4 us; tree 0.6 / 1.25 / 4.0); on multi-node rings
  NCCL takes the larger of this and the proxy's network overhead (1 us, x3 for Simple).
- ``net``: per network step, library and proxy side (ring 2.7 / 4.0 / 14 us; tree 5.0 / 8.5 / 14).
  NCCL adds the network's own latency to it (``latencyInter``, reported by the net plugin); the twin
  adds the RDMA NIC's per-message latency (chassis ``nic_latency``) and the path's switch forwarding
  and cable propagation from the compiled design (``Net.arc_latency``), so a deeper or longer fabric
  costs more per step.
- ``post``: per extra network message a rank posts in one step (a direct all-gather or all-to-all
  posts one per peer): NCCL's net overhead, 1 us (x3 for Simple).
- Protocol bandwidth: LL sends 8-byte flags with 8 bytes of data (0.5, at most 141 GB/s bus bandwidth
  in one server, 39 on two, 20.4 beyond: NCCL's Hopper/x86 caps), LL128 120 of 128 bytes (0.92, at
  most 36.7 GB/s per channel), Simple the full rate at the measured protocol efficiency ``eta``
  (0.94: 46-48 GB/s on a 50 GB/s NIC in nccl-tests); NVLink arcs carry ``nvlink_eta`` of their rate
  (370 of 450 GB/s: nccl-tests' ring AllReduce busbw inside one 8x H100 server).

Channels (:func:`ring_channels`), from NCCL's source, on a Hopper server with one 400G NIC per GPU:
``search.cc`` ``ncclTopoCompute`` finds one ring channel per NIC at 48 GB/s (the first speed of
``sm90SpeedArrayInter``; PCIe Gen5 x16 is 48 GB/s to NCCL) and stops once 8 x 48 exceeds the GPU's
NVLink total (18 x 20.6 GB/s); ``ncclTopoDupChannels`` does not duplicate them (compute capability
above 8.0, bandwidth below 50, more than 4 channels). ``connect.cc`` ``ncclTopoPostset`` doubles them
when it connects the rings (16, 2 per NIC), then on Hopper ("4 compute channels per search channel")
doubles again while fewer than 16 (NCCL 2.20.3 on): still 16. NCCL 2.18.1-2.19.x doubled whenever
2 x channels fit MAXCHANNELS (32), so the library of 2023 opened 32: 4 per NIC (``Library.version``).
With fewer than 8 GPUs of a server in the communicator the search finds at most 4 channels,
duplicates them at 24 GB/s, and connecting doubles them: 4 per NIC in every version. Each channel is
its own connection (``net.cc``: ring and tree buffers are never shared), with
``NCCL_IB_QPS_PER_CONNECTION`` QPs (default 1; Meta: 16), each QP its own RoCEv2 UDP source port.
Point-to-point uses 2 connections per network peer (``NCCL_NCHANNELS_PER_NET_PEER``). So "1-QP
ECMP" still hashes 2 flows per GPU pair of a ring (4 under NCCL 2.18-2.19) and "16 QPs" 32.

Worked example (8 B AllReduce, 16 servers x 8 GPUs, tree, LL, 1 us NIC, 2.4 us path):
6.8 + 2 x (7 x 0.6 + 4 x (5.0 + 1 + 2.4)) = 82 us: tens of microseconds, where NCCL's own model
(no NIC, no path) says 55 us.

>>> round(tree_latency_example() * 1e6)
82
"""

from __future__ import annotations

from dataclasses import dataclass, field

PROTOCOLS = ("LL", "LL128", "Simple")
US = 1e-6
# NVLink SHARP (NVLS) AllReduce inside one NVSwitch domain (twin/twins/net/nvls.py), calibrated on the open validation
# set's nccl-tests rows on one DGX H100 ([dgxc-nccl]: 586 us at 128 MiB, 4,029 us at 1 GiB, 62,648 us at 16 GiB): a fixed
# cost and a share of the NVLink rate. NCCL's own model (25 us, nvlsEfficiency 0.85 of its graph bandwidth) is faster than
# nccl-tests measures at these sizes.
NVLS_LATENCY = 100 * US
NVLS_EFFICIENCY = 0.685  # of the per-GPU NVLink rate, on the S (1 + 1/n) bytes each GPU moves each way
# NCCL 2.30 src/graph/tuning.cc ncclTunerConstantsDefaults (baseLatencies, hwLatencies), in seconds
BASE = {"ring": {"LL": 6.6 * US, "LL128": 14.0 * US, "Simple": 8.4 * US},
        "tree": {"LL": 6.8 * US, "LL128": 14.0 * US, "Simple": 8.4 * US}, "nvls": {"Simple": NVLS_LATENCY}}
NVL_STEP = {"ring": {"LL": 0.6 * US, "LL128": 1.9 * US, "Simple": 3.4 * US},
            "tree": {"LL": 0.6 * US, "LL128": 1.25 * US, "Simple": 4.0 * US}, "nvls": {"Simple": 0.0}}
NET_STEP = {"ring": {"LL": 2.7 * US, "LL128": 4.0 * US, "Simple": 14.0 * US},
            "tree": {"LL": 5.0 * US, "LL128": 8.5 * US, "Simple": 14.0 * US}, "nvls": {"Simple": 0.0}}
NET_OVERHEAD = {"LL": 1.0 * US, "LL128": 1.0 * US, "Simple": 3.0 * US}  # getNetOverhead (x86 Intel), x3 Simple
PROTO_BW = {"LL": 0.5, "LL128": 0.92, "Simple": 1.0}  # tuning.cc model refinements (ring)
LL_MAX_BUSBW = (141e9, 39e9, 20.4e9)  # llMaxBws: Hopper in one node; x86 Intel, 2 nodes; more nodes
LL128_MAX_BUSBW_PER_CHANNEL = 36.7e9  # perChMaxRingLL128Bws, Hopper
RING_CHANNELS_PER_NIC = 2  # search.cc one per NIC, connect.cc duplication (NCCL >= 2.20.3)
HOPPER_DOUBLING_ALWAYS = ((2, 18), (2, 20))  # connect.cc: versions whose Hopper doubling only needed 2 x 16 <= 32
PARTIAL_SERVER_CHANNELS_PER_NIC = 4  # search.cc dup + connect.cc: fewer than 8 GPUs per node, every version
INTRA_NODE_CHANNELS = 16  # search.cc on an 8x H100 NVSwitch server: 16 ring channels at 24 GB/s fill the 18 NVLinks
NCCL_VERSION = (2, 30)  # the NCCL whose tuning constants and channel rules the twin follows
P2P_CHANNELS_PER_PEER = 2  # NCCL_NCHANNELS_PER_NET_PEER
PROTOCOL_EFFICIENCY = 0.94  # Simple protocol on a 50 GB/s NIC: 46-48 GB/s (nccl-tests reports)
NVLINK_EFFICIENCY = 370 / 450  # calibrated: nccl-tests ring AllReduce busbw ~370 GB/s in one 8x H100 server (450 GB/s NVLink)
# pipelining granularity: one buffer slot (init.cc DEFAULT_*BUFFSIZE / NCCL_STEPS), payload bytes
# enqueue.cc: below nChannels x nThreads x threshold bytes NCCL runs fewer channels, then fewer threads
LL_MAX_THREADS = 512  # NCCL_LL_MAX_NTHREADS
LL_THREAD_THRESHOLD = 8  # NCCL_LL_THREAD_THRESHOLD: bytes per thread before the grid shrinks
CHUNK = {"LL": 8 * 512 * 8 * 16 / 8 / 2, "LL128": 120 * 640 * 8 * 8 / 8 * 120 / 128, "Simple": (1 << 22) / 8}


@dataclass(frozen=True)
class Library:
    """How the collective library runs: the knobs a scenario may override (``nccl:``)."""

    eta: float = PROTOCOL_EFFICIENCY
    nvlink_eta: float = NVLINK_EFFICIENCY
    protocols: tuple[str, ...] = PROTOCOLS
    channels_per_nic: int | None = None  # None: NCCL's pick (2, or 4 with a partly used server or NCCL 2.18-2.19)
    version: tuple[int, int] = NCCL_VERSION  # (major, minor): which channel rules apply (see ring_channels)
    p2p_channels: int = P2P_CHANNELS_PER_PEER
    nic_latency: float = 1e-6  # s, from the chassis
    step_overhead: float = 0.0  # s, extra per step (a what-if; NCCL's model has none)


@dataclass
class PhaseCost:
    """One phase: its bandwidth (fluid seconds per byte of S for one repeat), its sequential steps over
    NVLink and over the network, extra posts, the longest network path, and the bytes one connection
    carries per step (as a fraction of S), which sets how many chunks pipeline."""

    repeat: int = 1
    t_per_byte: float = 0.0
    intra: int = 0
    net: int = 0
    posts: int = 0
    path: float = 0.0  # s, the longest network path of the phase (switches + cables)
    flow_frac: float = 0.0
    ring: bool = False  # every step reuses the same links with new data (ring), else a pipeline (tree, p2p)
    beside: bool = False  # runs pipelined with the phase before it (other links): the longer of the two counts


@dataclass
class Cost:
    """One collective's cost model, ready to evaluate at any size.

    Chunked pipelining: the library moves each step's data in chunks of one buffer slot (NCCL
    4 MiB / 8 slots = 512 KiB for Simple, 576 KB of payload for LL128, 32 KiB for LL) with several
    slots in flight. In a ring every rank starts with data to send, so a step costs
    ``max(step latency + first chunk, the step's bytes at full rate)``: latency shows only while a
    step's data is a chunk or two (small messages), and large messages run at the fluid rate. In a
    pipeline through different links (a tree, one transfer) the latencies and the first chunk of each
    step add to the bandwidth time."""

    algo: str  # "ring" or "tree": which of NCCL's constant sets applies
    nodes: int  # servers taking part
    channels: int  # connections per NIC (LL128's cap is per channel)
    busbw_factor: float  # nccl-tests bus bandwidth factor of the op
    phases: list[PhaseCost] = field(default_factory=list)
    lib: Library = field(default_factory=Library)

    @property
    def t_per_byte(self) -> float:
        return _along([ph.repeat * ph.t_per_byte for ph in self.phases], [ph.beside for ph in self.phases])

    def _alphas(self, p: str) -> tuple[float, float]:
        nvl = NVL_STEP[self.algo][p]
        if self.nodes > 1 and self.algo == "ring":
            nvl = max(nvl, NET_OVERHEAD[p])
        return nvl + self.lib.step_overhead, NET_STEP[self.algo][p] + self.lib.nic_latency + self.lib.step_overhead

    def _bw_scale(self, size: float, p: str) -> float:
        """Factor on the bandwidth time from the protocol's bus-bandwidth cap (LL, LL128)."""
        t = size * self.t_per_byte / (self.lib.eta * PROTO_BW[p])
        cap = None
        if p == "LL":
            cap = min(LL_MAX_BUSBW[min(self.nodes, 3) - 1], LL_MAX_BUSBW[0] * ll_grid_share(size))
        elif p == "LL128" and self.nodes > 1:
            cap = LL128_MAX_BUSBW_PER_CHANNEL * self.channels
        if cap and t > 0:
            return max(1.0, size * self.busbw_factor / cap / t)
        return 1.0

    def bandwidth_time(self, size: float, p: str) -> float:
        return size * self.t_per_byte / (self.lib.eta * PROTO_BW[p]) * self._bw_scale(size, p)

    def time(self, size: float, p: str | None = None) -> float:
        if p is None:
            return min(self.time(size, q) for q in self.lib.protocols)
        a_nvl, a_net = self._alphas(p)
        scale = self._bw_scale(size, p) / (self.lib.eta * PROTO_BW[p])
        parts = []
        for ph in self.phases:
            bw = size * ph.t_per_byte * scale  # one repeat (one step) at full rate
            d = size * ph.flow_frac
            tc = bw * min(1.0, CHUNK[p] / d) if d > 0 else 0.0
            a_n = a_net + ph.path
            if ph.ring:
                t = ph.intra * max(a_nvl + tc, bw) + ph.net * max(a_n + tc, bw) + max(0, ph.repeat - ph.intra - ph.net) * bw
            else:
                t = ph.repeat * bw + ph.intra * a_nvl + ph.net * a_n + max(0, ph.intra + ph.net - 1) * tc
            parts.append(t + ph.posts * NET_OVERHEAD[p])
        return BASE[self.algo][p] + _along(parts, [ph.beside for ph in self.phases])

    def latency(self, p: str) -> float:
        """The collective's time at 1 byte under protocol ``p``: its latency floor."""
        return self.time(1.0, p)

    def protocol(self, size: float) -> str:
        """The protocol NCCL would pick at this size (the fastest under the model)."""
        return min(self.lib.protocols, key=lambda q: self.time(size, q))


def _along(parts: list[float], beside: list[bool]) -> float:
    """Phase times in sequence; where ``beside[k]``, phase k runs pipelined with phase k - 1 (on other links) and
    adds only what it outlasts it by.

    >>> _along([3.0, 2.0, 4.0], [False, True, False]), _along([3.0, 5.0], [False, True])
    (7.0, 5.0)
    """
    total, last = 0.0, 0.0
    for t, b in zip(parts, beside, strict=True):
        if b:
            total += max(0.0, t - last)
            last = max(last, t)
        else:
            total += t
            last = t
    return total


def ll_grid_share(size: float, channels: int = INTRA_NODE_CHANNELS) -> float:
    """The share of its full grid (channels x LL threads) NCCL runs an LL collective of ``size`` bytes
    on: enqueue.cc drops channels, then halves the threads while they stay a multiple of 128, until
    every thread has ``LL_THREAD_THRESHOLD`` bytes. LL's one-server cap (141 GB/s) is what the full grid
    moves, so a small message moves at its share of it: 1 KiB runs on one channel of 128 threads (1/64).

    >>> ll_grid_share(8) * 128, ll_grid_share(1024) * 64, ll_grid_share(1 << 20)
    (1.0, 1.0, 1.0)
    """
    nc, nt = channels, LL_MAX_THREADS
    while size < nc * nt * LL_THREAD_THRESHOLD:
        if nc >= 2:
            nc -= 1
        elif nt % 128 == 0:
            nt //= 2
        else:
            break
    return nc * nt / (channels * LL_MAX_THREADS)


def ring_channels(lib: Library, ranks_per_server: int, gpus_per_server: int) -> int:
    """Connections per NIC that NCCL opens for a ring or tree on this communicator (module docstring:
    search.cc finds one channel per NIC, connect.cc doubles them, and doubles them again on Hopper in
    NCCL 2.18.1-2.19.x).

    >>> ring_channels(Library(), 8, 8), ring_channels(Library(version=(2, 18)), 8, 8), ring_channels(Library(), 1, 8)
    (2, 4, 4)
    """
    if lib.channels_per_nic is not None:
        return lib.channels_per_nic
    if ranks_per_server < gpus_per_server:
        return PARTIAL_SERVER_CHANNELS_PER_NIC
    lo, hi = HOPPER_DOUBLING_ALWAYS
    return 2 * RING_CHANNELS_PER_NIC if lo <= tuple(lib.version) < hi else RING_CHANNELS_PER_NIC


def tree_latency_example() -> float:
    """The module docstring's worked example, as a Cost (no bandwidth term: 8 bytes)."""
    c = Cost("tree", 16, 2, 2 * 127 / 128, [PhaseCost(intra=14, net=8, path=2.4e-6)], Library())
    return c.time(8, "LL")
