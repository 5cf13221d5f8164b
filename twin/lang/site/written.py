"""The site language as written: :class:`~twin.lang.site.models.Site` plus ``hall_types:`` and halls
that name a type (``TypedHall``), for the JSON Schema and ``schemas/reference.md``.

Validation never builds these models: :mod:`twin.lang.site.hall_types` expands typed halls on the
loaded YAML and :class:`~twin.lang.site.models.Site` validates the result. They live apart so that
``twin validate`` and ``twin build`` do not build them (~20 ms of pydantic schemas at every start);
``twin schema`` and the reference do.
"""

from __future__ import annotations

import copy

from pydantic import BaseModel, ConfigDict, Field, create_model

from twin.lang.base import Model, Slug
from twin.lang.site.campus import Building
from twin.lang.site.models import Hall, Site
from twin.lang.site.workload_models import TrainingJob
from twin.lang.versions import VERSION_FIELD

_MERGE_NOTE = "nested sections merge field by field with the hall's own; lists are replaced whole"


PARTIAL_OF: dict[type[BaseModel], type[BaseModel]] = {}
"""Each partial model (every field optional) and the model whose fields it takes (for the reference)."""


def _partial(model: type[BaseModel], name: str, doc: str, keep: tuple[str, ...] = (), drop: tuple[str, ...] = (),
             first: dict[str, tuple] | None = None) -> type[BaseModel]:
    """``model`` with every field optional (``keep`` stays required), nested models partial in turn."""
    fields: dict[str, tuple] = dict(first or {})
    for key, f in model.model_fields.items():
        if key in drop:
            continue
        ann = f.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            ann = _nested_partial(ann)
        info = copy.copy(f)
        if key not in keep:
            info.default, info.default_factory = None, None
        fields[key] = (ann, info)
    partial = create_model(name, __base__=Model, __doc__=doc, **fields)
    PARTIAL_OF[partial] = model
    return partial


def _nested_partial(model: type[BaseModel]) -> type[BaseModel]:
    for partial, of in PARTIAL_OF.items():
        if of is model and partial.__name__ == f"Partial{model.__name__}":
            return partial
    return _partial(model, f"Partial{model.__name__}", f"Any field of {model.__name__}, all optional.")


HallType = _partial(
    Hall, "HallType",
    f"A named hall template under hall_types: any field of Hall except name, all optional. A hall that names "
    f"the type with `type:` takes every field it does not set from here; {_MERGE_NOTE}.",
    drop=("name",),
)

TypedHall = _partial(
    Hall, "TypedHall",
    f"A hall that names a hall type: name and type, then any field of Hall to override the type's; {_MERGE_NOTE}.",
    keep=("name",),
    first={"type": (Slug, Field(description="a name under hall_types: the hall takes every field it does not set from it"))},
)


BasedWorkload = _partial(
    TrainingJob, "BasedWorkload",
    "A workload that names a base with `base:`: name and base, then any field of a training workload to override the "
    "base's; nested sections merge field by field, lists are replaced whole.",
    keep=("name",), drop=("base",),
    first={"base": (Slug, Field(description="another workload of the site: this one takes every field it does not set from it"))},
)


def _building_input() -> type[BaseModel]:
    """A campus building as written: its halls in full or with a hall type (expanded by twin.lang.site.campus)."""
    fields: dict[str, tuple] = {}
    for key, f in Building.model_fields.items():
        if key == "halls":
            fields[key] = (list[Hall | TypedHall], Field(min_length=1, description="the building's halls: every field, or a `type:` plus overrides"))
        else:
            fields[key] = (f.annotation, copy.copy(f))
    return create_model("Building", __base__=Model, __doc__=Building.__doc__, **fields)


def _site_input() -> type[BaseModel]:
    fields: dict[str, tuple] = {"version": (int | None, Field(None, ge=1, description=VERSION_FIELD))}
    for key, f in Site.model_fields.items():
        if key == "halls":
            fields["halls"] = (list[Hall | TypedHall], Field(
                default_factory=list, description="the data halls: every field, or a `type:` from hall_types plus overrides "
                "(a campus writes them under buildings instead)"))
            fields["hall_types"] = (dict[Slug, HallType], Field(
                default_factory=dict, description="named hall templates that halls name with `type:` (write a repeated hall once)"))
        elif key == "buildings":
            fields[key] = (list[_building_input()], Field(default_factory=list, description=f.description))
        elif key == "workloads":
            fields[key] = (list[TrainingJob | BasedWorkload], Field(
                default_factory=list, description="the training workloads: every field, or a `base:` workload plus overrides"))
        else:
            fields[key] = (f.annotation, copy.copy(f))
    model = create_model("Site", __base__=Model, __doc__=Site.__doc__, **fields)
    model.model_config = ConfigDict(**{**Model.model_config, "title": Site.model_config.get("title"),
                                       "json_schema_extra": {"anyOf": [{"required": ["halls"]}, {"required": ["buildings"]}]}})
    model.model_rebuild(force=True)
    return model


SiteInput = _site_input()
"""The site language as written: :class:`~twin.lang.site.models.Site` plus ``hall_types`` and typed halls."""
