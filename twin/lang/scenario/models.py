"""The scenario language: what to simulate on a compiled design, validated like a site spec.

A scenario names collectives, training jobs and serving deployments to time, the routing schemes to
compare side by side, the collective library's settings (``nccl:``), and what-if *cases* (failures,
degraded links, a replaced server). Errors come back as
``FILE:LINE:COL: path: message (expected ...)`` through the same loader and pydantic mapping as specs.

Example (scenarios/server5.yaml, the talk's static-routing collision)::

    name: server5
    routing:
      - {name: static, scheme: static}
      - {name: e-ecmp-16qp, scheme: e-ecmp, qps: 16}
    collectives:
      - {name: a2a, op: alltoall, ranks: {servers: "1-4"}, sizes: [256 MiB]}
    cases:
      - {name: servers-1-4}
      - {name: server-4-replaced-by-5, replace: [{server: 4, with: 5}]}
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from twin.lang import limits, versions
from twin.lang.base import Count, IndexList, Model, Slug, Text, pattern
from twin.lang.diagnostics import Severity, SpecError
from twin.lang.loader import LoadError, Source, load_file, load_text
from twin.lang.scenario.campaign import Campaign
from twin.lang.scenario.cluster import Cluster
from twin.lang.scenario.job import Case, Failure, Job, Replace  # noqa: F401 - Failure, Replace: re-exported, part of the language
from twin.lang.scenario.power import PowerScenario
from twin.lang.units import DataSize, Time
from twin.lang.validator import diagnostic, pydantic_diagnostics

SchemeKind = Literal["ecmp", "e-ecmp", "static", "ftree", "spray", "adaptive", "te", "site"]
Op = Literal["allreduce", "reducescatter", "allgather", "alltoall", "sendrecv"]
Algorithm = Literal["ring", "tree", "hierarchical", "nvls", "halving", "doubling", "direct"]


class Hash(Model):
    function: Literal["xxmix", "crc32"] = "xxmix"
    seed: int = Field(1, ge=0, le=2**32 - 1)
    per_switch: bool = Field(True, description="each switch hashes with its own seed (False: polarisation what-if)")


class RoutingCase(Model):
    name: Slug
    scheme: SchemeKind = Field(description=(
        "ecmp, e-ecmp (hashed), static (destination tables: the host index at every hop), ftree (OpenSM's ftree "
        "tables, replayed), spray (even split per switch), adaptive "
        "(InfiniBand adaptive routing: the least loaded minimal-hop port, an even split on a tree of equal links), "
        "te (an optimal split), site (what the site's spec says its switches run: InfiniBand's routing_engine, "
        "ar_* adaptive, ftree replayed, any other static; Ethernet's hash_fields, e-ecmp with roce-dst-qp and ecmp without)"))
    qps: int | None = Field(None, ge=1, le=32, description="queue pairs per GPU pair; default: the site's routing.qps_per_gpu_pair")
    hash: Hash | None = None
    ecmp_width: int | None = Field(None, ge=1, le=1024)


class Ranks(Model):
    """Which GPUs take part. Ordinals count from 1 in topology order (zone, rack, server, GPU)."""

    gpus: Literal["all"] | IndexList | None = None
    servers: IndexList | None = None
    racks: IndexList | None = None
    zones: IndexList | None = None
    count: int | None = Field(None, ge=2, description="the first N GPUs of the selection")
    per_server: int | None = Field(None, ge=1, description="use only the first K GPUs of each server")

    @model_validator(mode="after")
    def _one(self) -> "Ranks":
        given = [k for k in ("gpus", "servers", "racks", "zones") if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of gpus, servers, racks, zones (got {', '.join(given)})")
        return self


class Sweep(Model):
    """Message sizes ``min, min x factor, ...`` up to ``max`` (nccl-tests' ``-b``, ``-e``, ``-f``)."""

    min: Annotated[DataSize, Field(gt=0)]
    max: Annotated[DataSize, Field(gt=0)]
    factor: float = Field(2.0, gt=1.0, le=1024)

    @model_validator(mode="after")
    def _count(self) -> "Sweep":
        if self.max < self.min:
            raise ValueError(f"max ({self.max:g} B) is below min ({self.min:g} B)")
        n = self.count
        if (msg := limits.exceeded("collective_sizes", n)) is not None:
            raise ValueError(f"min {self.min:g} B to max {self.max:g} B by x{self.factor:g} is {msg}")
        return self

    @property
    def count(self) -> float:
        """How many sizes the sweep expands to (counted, not listed: a factor near 1 gives millions)."""
        return math.floor(math.log(self.max / self.min * (1 + 1e-9)) / math.log(self.factor)) + 1


class Nccl(Model):
    """How the collective library runs (defaults: what NCCL picks on this topology; see twin/twins/net/nccl.py)."""

    channels_per_nic: int | None = Field(None, ge=1, le=16, description="ring/tree connections per NIC (default: NCCL's pick, 2; 4 when a server is partly used or under NCCL 2.18-2.19)")
    p2p_channels: int = Field(2, ge=1, le=16, description="connections per network peer for send/recv and all-to-all (NCCL_NCHANNELS_PER_NET_PEER)")
    version: str | None = Field(None, pattern=pattern(r"^2\.[0-9]{1,2}$", "an NCCL version such as '2.21'"), description="NCCL version whose channel rules apply, "
                                "e.g. '2.18' (2.18-2.19 open 4 channels per NIC on 8-GPU Hopper servers; default: current, 2)")
    protocols: list[Literal["LL", "LL128", "Simple"]] = Field(default_factory=lambda: ["LL", "LL128", "Simple"], min_length=1,
                                                              description="protocols the library may pick from (the fastest per size)")


class Collective(Model):
    name: Slug
    op: Op
    algorithm: Algorithm | None = Field(None, description="default: ring (direct for alltoall and sendrecv)")
    compare: list[Algorithm] | None = Field(None, min_length=2, description="time the collective under each of these algorithms and report the fastest per size")
    channels: int | None = Field(None, ge=1, le=16, description="connections per NIC for this collective (default: nccl.channels_per_nic)")
    per_rail: bool = Field(False, description="run it in every rail group at once (GPU c of each selected server), as the "
                           "inter-server stage of a hierarchical collective or a job's DP groups do")
    ranks: Ranks = Field(default_factory=lambda: Ranks(gpus="all"))
    peers: Ranks | None = Field(None, description="sendrecv: the receiving GPUs, paired in order with ranks")
    sizes: Annotated[list[Annotated[DataSize, Field(gt=0)]], Field(min_length=1)] | None = None
    sweep: Sweep | None = None
    dtype: Literal["bfloat16", "float16", "float32", "int8"] = "bfloat16"

    @model_validator(mode="after")
    def _sizes(self) -> "Collective":
        if self.sizes is None and self.sweep is None:
            raise ValueError("give sizes or sweep")
        if self.sizes is not None and (msg := limits.exceeded("collective_sizes", len(self.sizes))):
            raise ValueError(f"sizes: {msg}")
        if self.op == "sendrecv" and self.peers is None:
            raise ValueError("sendrecv needs peers")
        return self


class ServedModel(Model):
    """A model's shape for serving (the fields of a site workload that the math reads)."""

    parameters: Count
    layers: int = Field(ge=1, le=10_000)
    hidden_size: int = Field(ge=1)
    ffn_hidden_size: int | None = Field(None, ge=1)
    heads: int | None = Field(None, ge=1)
    kv_heads: int | None = Field(None, ge=1)
    vocab_size: int | None = Field(None, ge=1)


class Serving(Model):
    """Inference of one model replica: time to first token (prefill) and time per output token (decode)."""

    name: Slug
    workload: Slug | None = Field(None, description="take the model shape from this site workload")
    model: ServedModel | None = Field(None, description="or give the shape here")
    tp: int = Field(8, ge=1, le=1024, description="tensor parallelism; beyond a server's GPUs it spans servers over the fabric")
    pp: int = Field(1, ge=1, le=256, description="pipeline stages, one server group each, over the fabric")
    servers: IndexList | None = Field(None, description="servers of the replica, in stage order (default: the first ones)")
    batch: int = Field(1, ge=1, le=65536, description="sequences decoded together")
    prompt_tokens: int = Field(2048, ge=1)
    output_tokens: int = Field(256, ge=1)
    bytes_per_param: int = Field(2, ge=1, le=8, description="weight precision (2: BF16)")

    @model_validator(mode="after")
    def _one_model(self) -> "Serving":
        if (self.workload is None) == (self.model is None):
            raise ValueError("give either workload (a site workload's shape) or model")
        return self


class Scenario(Model):
    version: int | None = Field(None, ge=1, description=versions.VERSION_FIELD)
    name: Slug
    description: Text = ""
    protocol_efficiency: float = Field(0.94, gt=0, le=1, description="Simple protocol: share of line rate a NIC moves")
    step_overhead: Time = Field(0.0, description="extra per-step latency on top of NCCL's model (a what-if)")
    nccl: Nccl = Field(default_factory=Nccl)
    hash: Hash = Field(default_factory=Hash)
    power: PowerScenario | None = Field(None, description="the power and thermal twin (twin/twins/power)")
    routing: list[RoutingCase] = Field(default_factory=list, min_length=1, description="needed for collectives and jobs")
    collectives: list[Collective] = Field(default_factory=list)
    jobs: list[Job] = Field(default_factory=list)
    serving: list[Serving] = Field(default_factory=list)
    cases: list[Case] = Field(default_factory=lambda: [Case(name="baseline")])
    campaign: Campaign | None = Field(None, description="reliability twin: a training campaign (twin/twins/reliability)")
    cluster: Cluster | None = Field(None, description="cluster twin: the whole site over weeks, every job, its scheduler and failures (twin/twins/cluster)")

    @field_validator("routing")
    @classmethod
    def _some_routing(cls, v: list[RoutingCase], info: ValidationInfo) -> list[RoutingCase]:
        if not v and info.data.get("power") is None:
            raise ValueError("give at least one routing scheme (a power-only scenario needs a power: section)")
        return v

    @model_validator(mode="after")
    def _unique(self) -> "Scenario":
        for what, names in (("routing", [r.name for r in self.routing]), ("collectives", [c.name for c in self.collectives]), ("cases", [c.name for c in self.cases])):
            dup = {n for n in names if names.count(n) > 1}
            if dup:
                raise ValueError(f"duplicate {what} name(s): {', '.join(sorted(dup))}")
        if not self.collectives and not self.jobs and not self.serving and self.campaign is None and self.power is None and self.cluster is None:
            raise ValueError("nothing to simulate: give collectives, jobs, serving, a campaign, power or a cluster")
        if (self.collectives or self.jobs or self.serving) and not self.routing:
            raise ValueError("collectives, jobs and serving need routing: at least one routing scheme")
        return self


def load_scenario(path: str | Path) -> tuple[Scenario, Source]:
    """Parse and validate a scenario file; raise SpecError with every positioned problem."""
    try:
        src = load_file(path)
    except LoadError as e:
        raise SpecError(e.diagnostics) from None
    return _validate(src), src


def parse_scenario(text: str, path: str = "<scenario>") -> tuple[Scenario, Source]:
    try:
        src = load_text(text, path)
    except LoadError as e:
        raise SpecError(e.diagnostics) from None
    return _validate(src), src


def validate_source(src: Source) -> Scenario:
    """A scenario from an already loaded document (e.g. a section of a sweep file, keeping its positions)."""
    return _validate(src)


def _validate(src: Source) -> Scenario:
    if not isinstance(src.data, dict):
        raise SpecError([diagnostic(src, Severity.ERROR, (), "a scenario must be a mapping", "name:, routing:, collectives:")])
    if errors := [d for d in versions.read(src, "scenario") if d.severity is Severity.ERROR]:
        raise SpecError(errors)
    try:
        return Scenario.model_validate(src.data)
    except ValidationError as e:
        raise SpecError(pydantic_diagnostics(src, e, Scenario)) from None
