"""The catalog's part of the input language: chassis, switch models (with their SONiC port map),
cable media and the catalog that holds them (built-in entries in ``twin/lang/catalog/builtin.yaml``).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from twin.lang.base import Model, Slug, Text
from twin.lang.site.config_targets import TARGETS, ConfigName, check_technology
from twin.lang.site.cost_models import FacilityCost
from twin.lang.site.portmap import PortMap
from twin.lang.site.power import PhasePower
from twin.lang.site.reliability_models import FailureClass
from twin.lang.site.workload_models import RankOrder, Stragglers, check_order
from twin.lang.units import DATA_RATE, DATA_SIZE, LENGTH, MASS, POWER, PRICE, TIME, Length, PricePerLength, bounded

# The physical domain of the catalog's figures (canonical units), each with room to spare above today's
# largest part: a value outside is a located error, never a division by zero or a run without end in a twin.
GpuPower = bounded(POWER, above=0, at_most=10e3)  # one GPU: B300 is 1.4 kW
SystemPower = bounded(POWER, above=0, at_most=2e6)  # a server, or a whole rack-scale system (NVL72 ~132 kW)
SwitchPower = bounded(POWER, at_least=0, at_most=1e6)
EndPower = bounded(POWER, at_least=0, at_most=1e3)  # one transceiver
PortRate = bounded(DATA_RATE, above=0, at_most=1e13)  # a NIC or switch port: 10 Tbit/s
NvlinkRate = bounded(DATA_RATE, above=0, at_most=1e14)  # per GPU and direction: NVLink 5 is 7.2 Tbit/s
HbmRate = bounded(DATA_RATE, above=0, at_most=1e15)  # per GPU: B300 is 8 TB/s = 64 Tbit/s
Memory = bounded(DATA_SIZE, above=0, at_most=1e13)  # GPU HBM (B300: 288 GB) or a switch buffer
Latency = bounded(TIME, at_least=0, at_most=0.01)
UnitMass = bounded(MASS, above=0, at_most=1e4)
MassPerLength = bounded(MASS, at_least=0, at_most=100)  # per metre of cable
Cost = bounded(PRICE, at_least=0, at_most=1e10)
Reach = bounded(LENGTH, above=0, at_most=1e7)
MinLength = bounded(LENGTH, at_least=0, at_most=1e7)
Fraction = Annotated[float, Field(gt=0, le=1)]

# ---------------------------------------------------------------- catalog


class Kernels(Model):
    """How close a GPU's kernels come to its datasheet peaks: the few constants of the twin's compute
    model (twin/twins/workload/compute.py). Efficiency of a GEMM with dimensions m, n, k is
    ``gemm_efficiency x w(m, n) f(k)`` with ``f(d) = d / (d + gemm_half_dim)`` and ``w`` the share of the
    SMs its output tiles keep busy (``sms``; without it ``f(m) f(n)``); of an attention kernel
    over a context of c tokens ``attention_efficiency x c / (c + attention_half_context)`` (forward) and
    ``attention_backward`` times that (backward); memory-bound kernels move ``hbm_efficiency`` of the
    datasheet HBM bandwidth. Every kernel is also held under the roofline ``bytes / HBM bandwidth``, and
    all run at ``sustained`` of their benchmark speed."""

    gemm_efficiency: float = Field(gt=0, le=1, description="large BF16 GEMMs in a benchmark: fraction of the dense peak")
    gemm_half_dim: float = Field(64.0, gt=0, le=1e6, description="GEMM dimension at which a dimension halves the efficiency")
    attention_efficiency: float = Field(gt=0, le=1, description="fused attention forward at long context: fraction of peak")
    attention_half_context: float = Field(256.0, gt=0, le=1e9, description="context length (tokens) at which attention runs at half its efficiency")
    attention_backward: float = Field(0.75, gt=0, le=2, description="backward attention efficiency relative to forward")
    hbm_efficiency: float = Field(0.9, gt=0, le=1, description="fraction of HBM bandwidth memory-bound kernels sustain")
    fp8_gemm_efficiency: float | None = Field(None, gt=0, le=1, description="large FP8 GEMMs in a benchmark: fraction of the FP8 "
                                              "dense peak (with gemm_half_dim as for BF16)")
    sms: int | None = Field(None, ge=1, le=1024, description="streaming multiprocessors (datasheet): GEMM output tiles run in waves "
                            "of this many (tile and wave quantization); without it the smooth factor f(m) f(n)")
    sustained: float = Field(1.0, gt=0, le=1, description="share of benchmark kernel speed the hardware keeps through a step "
                             "(what a framework loses belongs to its stack: catalog stacks:)")
    source: Text = Field(min_length=1)


class StackPlans(Model):
    """What plans the stack can run (``twin plan`` searches only these): a framework of 2021 has no
    distributed optimizer, no sequence or context parallelism and no FP8."""

    zero: list[Literal[0, 1, 2, 3]] = Field([0, 1, 2, 3], min_length=1, description="ZeRO stages it runs")
    recompute: list[Literal["none", "selective", "full"]] = Field(["none", "selective", "full"], min_length=1,
                                                                 description="recomputation policies it offers")
    sequence_parallel: list[bool] = Field([False, True], min_length=1, description="sequence parallelism: without, with, or both")
    context_parallel: bool = Field(True, description="it splits a sequence over GPUs (CP)")
    interleaved: bool = Field(True, description="it runs the interleaved pipeline schedule (virtual stages)")
    uneven_stages: bool = Field(False, description="its pipeline stages may hold unequal layer counts (ceil(layers / PP) on the "
                                "longest), interleaved into chunks that divide the longest stage; otherwise the layers split evenly "
                                "over PP x virtual stages (Megatron-LM's rule)")
    zero_with_pp: list[Literal[0, 1, 2, 3]] = Field([0, 1], min_length=1, description="ZeRO stages it runs together with pipeline "
                                                    "parallelism (Megatron-LM shards only the optimizer under PP and DeepSpeed refuses "
                                                    "ZeRO 2 and 3 with it; a stack that shards gradients beside its pipeline says so)")
    expert_parallel: bool = Field(True, description="it splits MoE experts over data-parallel ranks (EP)")
    fp8: bool = Field(True, description="it runs GEMMs in FP8 where the GPU has it")
    orders: list[RankOrder] | None = Field(None, min_length=1, description="the rank orders the framework lays its groups out in, "
                                           "fastest first; the first is what it does unless a job states dims (none: any order, "
                                           "tp-cp-pp-dp by default)")

    @field_validator("orders")
    @classmethod
    def _orders(cls, v):
        return [check_order(o) for o in v] if v is not None else v


class Stack(Model):
    """A software stack (framework, its kernels and its schedule): what it loses against the kernels a
    benchmark measures, separate from the GPU. Its constants come only from end-to-end rows of the open
    validation set (``twin validate-jobs``); a stack with no row there is not invented: pick the nearest."""

    description: Text = ""
    kernel_share: float = Field(gt=0, le=1, description="share of benchmark kernel speed the stack keeps through a training step "
                                "(launch gaps, synchronisation, kernels the model leaves out)")
    attention: Literal["fused", "unfused"] = Field("fused", description="fused: FlashAttention-style kernel; unfused: QK^T and AV "
                                                   "as batched GEMMs around a softmax kernel over the materialised scores")
    overlap_grad_reduce: bool = Field(True, description="gradient reduction overlaps the backward pass (a recipe may override)")
    overlap_param_gather: bool = Field(True, description="the weight all-gather overlaps the next forward pass (a recipe may override)")
    overlap_tp: list[Literal["allgather", "reducescatter"]] = Field(
        default_factory=list, description="TP collectives (sequence parallelism) overlapped with the GEMMs next to them, by kind "
        "(Megatron-Core/Transformer Engine userbuffers); a recipe may override")
    overlap_pp: bool = Field(True, description="pipeline sends and receives overlap the steady state's compute (false: each micro-batch "
                             "waits for its transfers, Megatron-LM 2021); a recipe may override")
    overlap_cp: bool = Field(True, description="a context-parallel ring's K/V exchange hides behind the attention kernel; a recipe may override")
    pipeline_schedule: Literal["1f1b", "dualpipe"] = Field("1f1b", description="1f1b: one-forward-one-backward (interleaved with "
                                                          "virtual stages); dualpipe: DeepSeek-V3's bidirectional schedule (arXiv 2412.19437 "
                                                          "s3.2.1: two stages per GPU, PP even, no interleaving); a recipe may override")
    overlap_ep: bool = Field(False, description="an MoE layer's expert all-to-alls run beside another micro-batch's compute (DeepSeek-V3's "
                             "DualPipe, arXiv 2412.19437 s3.2.1; Megatron-Core's overlap_moe_expert_parallel_comm); a recipe may override")
    zero3_bucket: bounded(DATA_SIZE, above=0, at_most=1e12) | None = Field(None, description="ZeRO-3: bytes of the next layer's weight gather (and of a layer's gradient "
                                          "reduce-scatter) that may run ahead of need (DeepSpeed's stage3_prefetch_bucket_size); none: "
                                          "a whole layer (FSDP units); a recipe may override")
    zero3_collectives: Literal["layer", "tensor"] = Field("layer", description="ZeRO-3: one all-gather (and one reduce-scatter) per layer "
                                                        "(FSDP's flat units) or one per parameter tensor (DeepSpeed 2021: each tensor's own "
                                                        "collective, every one paying the ring's latency); a recipe may override")
    zero3_host: Latency = Field(0.0, description="ZeRO-3: host time per parameter all-gather during which the GPU waits (DeepSpeed 2021 "
                                "synchronises the device before each gather and does the partition's bookkeeping in Python before it "
                                "launches; one per tensor with zero3_collectives: tensor, else one per layer); 0: none")
    optimizer_bytes: float = Field(12.0, ge=0, le=64, description="bytes of optimizer state per parameter (12: FP32 master weights "
                                   "and Adam's two moments; more where the stack keeps more, e.g. an FP32 copy of the gradients); "
                                   "ZeRO 1 shards them over the data-parallel ranks")
    stragglers: Stragglers | None = Field(None, description="per-rank slowdown of a step under this stack (none: no stragglers; a recipe may state one)")
    grad_reduce_fp32: bool = Field(False, description="gradients are held and reduced over the data-parallel ranks in FP32 (Megatron-Core's "
                                   "grad_reduce_in_fp32): 4 bytes per gradient in memory and in the reduction, not 2; a recipe may override")
    plans: StackPlans = Field(default_factory=StackPlans, description="the plans it can run (twin plan searches only these)")
    year: int | None = Field(None, ge=2015, le=2100, description="when the stack was measured")
    source: Text = Field(min_length=1)


class RackScale(Model):
    """A rack-scale NVLink system (GB200/GB300 NVL72): the chassis is the whole rack, its GPUs sit on
    compute trays and NVLink switch trays join all of them in one NVLink domain. The fabric's rails follow
    a GPU's position on its tray; a compute tray's failure takes its GPUs, a switch tray's the domain's
    NVLink bandwidth share (twin/twins/reliability). With ``racks: 2`` (GB200 NVL36x2) the system is a pair
    of racks, adjacent in one row, whose GPUs share one NVLink domain: the chassis' GPUs, NICs, trays,
    power and mass are the pair's, its height one rack's."""

    racks: int = Field(1, ge=1, le=2, description="racks the system fills: 1 (NVL72), or 2 (NVL36x2: one NVLink domain over "
                       "a pair of adjacent racks, half the trays in each)")
    compute_trays: int = Field(ge=1, le=64, description="compute trays in the system (every rack of it)")
    gpus_per_tray: int = Field(ge=1, le=16, description="GPUs per compute tray (the rails of a rail-aligned fabric)")
    switch_trays: int = Field(ge=1, le=64, description="NVLink switch trays joining the trays' GPUs (every rack of the system)")
    liquid_fraction: float = Field(ge=0, le=1, description="share of the rack's heat the liquid loop takes (the rest goes to air)")
    source: Text = Field(min_length=1)


class Chassis(Model):
    """A GPU server (e.g. Grand Teton): what a rack is filled with; with ``rack_scale`` the whole rack."""

    description: Text = ""
    vendor: Text = Field("", description="maker of the chassis (NetBox manufacturer)")
    gpus: int = Field(ge=0, le=256)
    gpu_model: Text = "H100-SXM"
    gpu_tdp: GpuPower
    gpu_min_power: GpuPower | None = Field(None, description="lowest settable GPU power cap")
    max_power: SystemPower = Field(description="server input power at full load with GPUs at TDP")
    nics: int = Field(ge=0, le=256, description="backend (GPU fabric) NICs")
    nic_speed: PortRate
    nic_ports: int = Field(1, ge=1, le=8, description="network ports of one backend NIC, sharing its speed (e.g. an 800G "
                           "ConnectX-8 as 2 x 400G); fabric.planes spreads them over the planes")
    nvlink_bandwidth: NvlinkRate | None = Field(None, description="per-GPU NVLink bandwidth, one direction")
    gpu_peak_tflops: float = Field(989.0, gt=0, le=1e5, description="dense BF16 peak per GPU")
    gpu_peak_fp8_tflops: float | None = Field(None, gt=0, le=1e5, description="dense FP8 peak per GPU (FP8 GEMMs; none: no FP8)")
    nvlink_domain: int | None = Field(None, ge=1, le=4096, description="GPUs that share one NVLink switch domain (default: the chassis' GPUs)")
    nvls: bool = Field(False, description="NVSwitch reductions (NVLink SHARP): NCCL's NVLS AllReduce inside the NVLink domain")
    perf_vs_power: list[tuple[Fraction, Fraction]] = Field(
        default_factory=list, max_length=100,
        description="[power cap, throughput] pairs, each a fraction of its value at TDP (> 0, <= 1); concave",
    )
    phase_power: PhasePower | None = Field(None, description="per-GPU power by training phase (the power twin)")
    hbm_bandwidth: HbmRate | None = Field(None, description="per-GPU HBM bandwidth (datasheet); the roofline's memory roof")
    gpu_memory: Memory | None = Field(None, description="per-GPU HBM capacity; serving deployments must fit in it")
    nic_latency: Latency = Field(1e-6, description="RDMA NIC per-message latency (send and receive NIC together)")
    kernels: Kernels | None = Field(None, description="sustained kernel efficiencies of the GPU (the compute model's constants)")
    height_u: int = Field(ge=1, le=60)
    weight: UnitMass
    price: Cost | None = Field(None, description="purchase price of one server, e.g. '270000 USD' (capex)")
    rack_scale: RackScale | None = Field(None, description="a rack-scale NVLink system: trays, switch trays, liquid share")
    source: Text = Field(min_length=1, description="where the figures come from, or 'assumed'")

    @property
    def domain(self) -> int:
        """GPUs of one NVLink domain (the chassis' GPUs unless ``nvlink_domain`` says otherwise)."""
        return self.nvlink_domain or self.gpus

    @property
    def span(self) -> int:
        """Racks one chassis fills: 2 for a rack pair (NVL36x2), else 1 (a server, or a whole-rack system)."""
        return self.rack_scale.racks if self.rack_scale is not None else 1

    @model_validator(mode="after")
    def _rack_scale(self) -> "Chassis":
        rs = self.rack_scale
        if rs is None:
            return self
        if rs.compute_trays * rs.gpus_per_tray != self.gpus:
            raise ValueError(f"rack_scale: {rs.compute_trays} compute trays x {rs.gpus_per_tray} GPUs = "
                             f"{rs.compute_trays * rs.gpus_per_tray}, the chassis has {self.gpus} GPUs")
        if self.domain > self.gpus:
            whole = "rack pair" if rs.racks == 2 else "rack-scale system"
            raise ValueError(f"nvlink_domain {self.domain} is larger than its {whole} of {self.gpus} GPUs "
                             f"(at most {self.gpus}: an NVLink domain does not leave its {'pair of racks' if rs.racks == 2 else 'rack'})")
        for what, n in (("compute_trays", rs.compute_trays), ("switch_trays", rs.switch_trays)):
            if n % rs.racks:
                raise ValueError(f"rack_scale: {n} {what.replace('_', ' ')} do not split evenly over its {rs.racks} racks")
        if self.gpus % self.domain or self.domain % rs.gpus_per_tray:
            raise ValueError(f"nvlink_domain {self.domain} does not split the rack's {self.gpus} GPUs into whole domains "
                             f"of whole {rs.gpus_per_tray}-GPU trays")
        if self.nics % self.gpus and self.gpus % self.nics:
            raise ValueError(f"{self.nics} NICs do not align with {self.gpus} GPUs (rails follow a GPU's tray position)")
        return self


PORT_PLACEHOLDERS = ("n", "n0", "n0_step", "cage", "sub")
PORT_CHARS = r"[A-Za-z0-9_./-]"  # what every target's interface names share; the placeholders render digits
MAX_PORT_TEMPLATE = 40


def render_port_name(template: str, n0: int, ports_per_cage: int, name_step: int = 1) -> str:
    """Name of logical port ``n0`` (0-based): plain replacement of the placeholders, never ``str.format``."""
    cage, sub = divmod(n0, ports_per_cage)
    return (
        template.replace("{n0_step}", str(n0 * name_step))
        .replace("{n0}", str(n0))
        .replace("{n}", str(n0 + 1))
        .replace("{cage}", str(cage + 1))
        .replace("{sub}", str(sub + 1))
    )


class SwitchModel(Model):
    """A switch model: radix, speed and the physical figures placement and the BOM need."""

    description: Text = ""
    vendor: Text
    technology: Literal["ethernet", "infiniband"] = "ethernet"
    config: ConfigName = Field(
        description="the configuration target its switches get (required, never guessed from the vendor): "
        + "; ".join(f"{t.name}: {t.summary}" for t in TARGETS),
    )
    asic: Text = Field("", description="switch ASIC, shown in the report's fabric table")
    ports: int = Field(ge=1, le=4096, description="logical ports at port_speed")
    port_speed: PortRate
    ports_per_cage: int = Field(1, ge=1, le=8, description="e.g. 2 for an 800G OSFP cage split 2x400G")
    cage_lanes: int | None = Field(None, ge=1, le=16, exclude_if=lambda v: v is None, description=(
        "electrical lanes of one cage by its type (OSFP and QSFP-DD 8, QSFP 4), numbering a split cage's lanes in "
        "breakouts.csv and NetBox when there is no port map (default 4)"))
    port_name: str = Field(
        "Ethernet{n}",
        description="port naming: {n} 1-based port, {n0} 0-based, {n0_step} 0-based x port_map.name_step, "
        "{cage} 1-based cage, {sub} 1-based lane",
    )
    port_map: PortMap | None = Field(None, description="SONiC platform port layout (required for SONiC configs)")
    power: SwitchPower = Field(description="typical power with optics excluded")
    max_power: SwitchPower | None = None
    buffer: Memory | None = Field(None, description="packet buffer; SONiC buffer pools are sized from it")
    latency: Latency = Field(description="port-to-port forwarding latency")
    height_u: int = Field(ge=1, le=60)
    weight: UnitMass
    price: Cost | None = Field(None, description="purchase price of one switch with its software licence (capex)")
    source: Text = Field(min_length=1)

    @field_validator("port_name")
    @classmethod
    def _port_name_placeholders(cls, v: str) -> str:
        known = "|".join(PORT_PLACEHOLDERS)
        bad = set(re.findall(r"\{([^}]*)\}", v)) - set(PORT_PLACEHOLDERS)
        if bad:
            raise ValueError(f"unknown placeholder(s) {sorted(bad)}; allowed: {', '.join(PORT_PLACEHOLDERS)}")
        rest = re.sub(r"\{(" + known + r")\}", "", v)
        if "{" in rest or "}" in rest:
            raise ValueError("unbalanced braces")
        if len(v) > MAX_PORT_TEMPLATE:
            raise ValueError(f"{len(v)} characters; at most {MAX_PORT_TEMPLATE}")
        bad_chars = sorted({c for c in rest if not re.fullmatch(PORT_CHARS, c)})
        if bad_chars:
            raise ValueError(f"port names become interface names in configs: {', '.join(map(repr, bad_chars))} not allowed "
                             "(letters, digits, '_', '.', '/', '-' and the placeholders)")
        if not re.match(r"[A-Za-z0-9{]", v):
            raise ValueError("a port name starts with a letter, a digit or a placeholder")
        return v

    @field_validator("config")
    @classmethod
    def _config_fits_technology(cls, v: str, info) -> str:
        if "technology" in info.data:
            check_technology(v, info.data["technology"])
        return v

    @model_validator(mode="after")
    def _cages(self) -> "SwitchModel":
        if self.ports % self.ports_per_cage:
            raise ValueError(f"ports ({self.ports}) must be a multiple of ports_per_cage ({self.ports_per_cage})")
        if "{n0_step}" in self.port_name and self.port_map is None:
            raise ValueError("port_name uses {n0_step}, which needs a port_map (its name_step)")
        step = self.port_map.name_step if self.port_map is not None else 1
        names = {render_port_name(self.port_name, i, self.ports_per_cage, step) for i in range(self.ports)}
        if len(names) != self.ports:
            raise ValueError(f"port_name '{self.port_name}' gives two ports the same name; use {{n}} or {{cage}}/{{sub}}")
        if self.port_map is not None and self.port_map.cage_ports != self.ports_per_cage:
            raise ValueError(f"port_map breakout mode '{self.port_map.breakouts[0]}' puts {self.port_map.cage_ports} port(s) "
                             f"in a cage, ports_per_cage is {self.ports_per_cage}")
        if self.port_map is not None and self.port_map.speeds[0] != self.port_speed:
            raise ValueError(
                f"port_map breakout mode '{self.port_map.breakouts[0]}' runs ports at "
                f"{self.port_map.speeds[0] / 1e9:g}G, port_speed is {self.port_speed / 1e9:g}G"
            )
        return self


class Medium(Model):
    """A cable or optic: reach decides where it can be used, power and count go to the BOM."""

    description: Text = ""
    kind: Literal["dac", "aec", "aoc", "optic"]
    speed: PortRate
    reach: Reach
    min_length: MinLength = 0.0
    power_per_end: EndPower = 0.0
    fiber: Literal["copper", "mmf", "smf"]
    connector: Text = ""
    stock_lengths: list[Length] = Field(min_length=1)
    weight_per_metre: MassPerLength = Field(description="cable mass per metre of length")
    price: Cost | None = Field(None, description="optic: one transceiver; DAC, AEC, AOC: one cable assembly (capex)")
    price_per_metre: PricePerLength = Field(0.0, description="optic: its fiber per metre; DAC, AEC, AOC: added to the assembly per metre")
    module_ports: int = Field(1, ge=1, le=8, description="optic: links one transceiver at the switch end carries (2: a twin-port "
                              "800G OSFP with two 400G fibers, one to each NIC); used only where fabric.media lists it")
    far_end: str | None = Field(None, description="with module_ports > 1: the catalog medium whose transceiver sits at each far end")
    source: Text = Field(min_length=1)

    @model_validator(mode="after")
    def _module(self) -> "Medium":
        if self.module_ports > 1 and (self.kind != "optic" or self.far_end is None):
            raise ValueError("module_ports > 1 is a pluggable optic (kind: optic) with the far end's medium (far_end)")
        return self

    @property
    def pluggable(self) -> bool:
        """Optics are two transceivers plus a fiber; DAC/AEC/AOC are one assembly with fixed ends."""
        return self.kind == "optic"


class Catalog(Model):
    """Hardware entries; a site's catalog adds to (and may override) the built-in one."""

    chassis: dict[Slug, Chassis] = Field(default_factory=dict)
    switches: dict[Slug, SwitchModel] = Field(default_factory=dict)
    media: dict[Slug, Medium] = Field(default_factory=dict)
    reliability: dict[Slug, FailureClass] = Field(default_factory=dict, description="failure classes (twin/lang/site/reliability_models.py)")
    stacks: dict[Slug, Stack] = Field(default_factory=dict, description="software stacks (what a framework loses; workloads' stack:)")
    facility: dict[Literal["air", "liquid"], FacilityCost] = Field(
        default_factory=dict, description="capital cost of a hall per watt of critical IT load, by cooling medium (twin/lang/site/cost_models.py)")
