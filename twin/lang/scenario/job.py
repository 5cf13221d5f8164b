"""The scenario entries the build's default twin makes for itself: a training job (:class:`Job`) and a
what-if case (:class:`Case`, its failures and replaced servers). They live apart from the rest of the
scenario language (:mod:`twin.lang.scenario.models`, which re-exports them) so that `twin build`,
which times the site's first workload as a job on a healthy fabric, does not construct the whole
scenario schema (its power and campaign models) to do so.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from twin.lang.base import Model, Slug
from twin.lang.site.workload_models import RECIPE_FIELDS, RankOrder, Stragglers, check_order


class Job(Model):
    workload: Slug = Field(description="a workload name of the site spec")
    order: Literal["topology", "naive"] = Field("topology", description="rank order: topology-aware or shuffled servers")
    dims: RankOrder | None = Field(None, description="rank decomposition, fastest first (default: the first of its stack's "
                                   "plans.orders, else tp-cp-pp-dp)")
    dp_overlap: float = Field(1.0, ge=0, le=1, description="share of the first forward / last backward micro-batch that hides the DP all-gather / reduce-scatter")
    kv_heads: int | None = Field(None, ge=1, description="GQA key/value heads (default: the workload's)")
    virtual_stages: int | None = Field(None, ge=1, le=64, description="interleaved pipeline stages per GPU (default: the workload's)")
    overlap_tp: list[Literal["allgather", "reducescatter"]] | None = Field(None, description="TP collectives overlapped with GEMMs (default: the workload's)")
    overlap_pp: bool | None = Field(None, description="pipeline transfers overlap the steady state (default: the workload's)")
    overlap_cp: bool | None = Field(None, description="a CP ring hides behind attention (default: the workload's)")
    overlap_ep: bool | None = Field(None, description="expert all-to-alls run beside another micro-batch's compute (default: the workload's)")
    overlap_grad_reduce: bool | None = Field(None, description="gradient reduction overlaps the backward pass (default: the workload's)")
    overlap_param_gather: bool | None = Field(None, description="the weight all-gather overlaps the forward pass (default: the workload's)")
    stragglers: Stragglers | None = Field(None, description="per-rank slowdown whose slowest rank sets each step (default: the workload's)")
    plan: Literal["as-written", "best"] = Field("as-written", description="as-written: the workload's plan with the recipe's "
                                                 "changes; best: the plan search's pick on this design (twin plan), the recipe's plan "
                                                 "fields and a stated dims pinning it")
    recipe: dict[str, Any] | None = Field(None, description="any recipe or stack field of the workload (tp, micro_batch, recompute, zero, "
                                          "fp8, stack, ...), laid over the workload's for this job and checked as the workload's are")

    @model_validator(mode="after")
    def _recipe_fields(self) -> "Job":
        if self.dims is not None:
            check_order(self.dims)
        bad = sorted(set(self.recipe or {}) - set(RECIPE_FIELDS))
        if bad:
            raise ValueError(f"recipe: {', '.join(bad)} is not a recipe field (one of: {', '.join(RECIPE_FIELDS)})")
        return self
    seed: int = 7


class Failure(Model):
    link: str | None = None
    switch: str | None = None
    server: int | str | None = None
    tier: str | None = Field(None, description="every link of a tier, e.g. ctsw-atsw")
    plane: int | None = Field(None, ge=1, le=8, description="every link of a plane of a multi-plane fabric (1-based, as in plane2-leaf-0001)")
    capacity: float = Field(0.0, ge=0, le=1, description="remaining fraction; 0 = down")

    @model_validator(mode="after")
    def _one(self) -> "Failure":
        given = [k for k in ("link", "switch", "server", "tier", "plane") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of link, switch, server, tier, plane")
        if (self.switch is not None or self.server is not None) and self.capacity:
            raise ValueError("a switch or server is either up or down; capacity applies to links and tiers")
        return self


class Replace(Model):
    server: int | str
    with_: int | str = Field(alias="with")


class Case(Model):
    name: Slug
    failures: list[Failure] = Field(default_factory=list)
    replace: list[Replace] = Field(default_factory=list)
