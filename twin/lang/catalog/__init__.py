"""The built-in hardware catalog and its merge with a site's own entries.

Site entries override built-in entries of the same name: a user who knows the real power of their
switch writes it once in the site and every pass uses it.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

from twin.lang.site.catalog_models import Catalog

BUILTIN_PATH = Path(__file__).with_name("builtin.yaml")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml where PyYAML has it: 5x faster, the same data
CAMPUS_PATH = Path(__file__).with_name("campus.yaml")  # long-reach optics, for sites with buildings


@lru_cache(maxsize=1)
def builtin() -> Catalog:
    with BUILTIN_PATH.open(encoding="utf-8") as f:
        return Catalog.model_validate(yaml.load(f, Loader=_LOADER))


@lru_cache(maxsize=1)
def campus() -> Catalog:
    """The optics that join buildings (LR4, ZR, ZR+): in the catalog of a campus site only, so a site of
    one building keeps the catalog (and the design.json) it had."""
    with CAMPUS_PATH.open(encoding="utf-8") as f:
        return Catalog.model_validate(yaml.load(f, Loader=_LOADER))


def merged(site_catalog: Catalog, campus_site: bool = False) -> Catalog:
    """Built-in catalog with the site's entries laid over it (site wins on a name clash); a campus site
    (one with ``buildings:``) also gets :func:`campus`."""
    base = builtin()
    extra = campus().media if campus_site else {}
    return Catalog(
        chassis={**base.chassis, **site_catalog.chassis},
        switches={**base.switches, **site_catalog.switches},
        media={**base.media, **extra, **site_catalog.media},
        reliability={**base.reliability, **site_catalog.reliability},
        stacks={**base.stacks, **site_catalog.stacks},
        facility={**base.facility, **site_catalog.facility},
    )
