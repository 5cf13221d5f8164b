"""The config targets: one registry entry per switch OS twin writes a configuration for.

A switch model names its target in the catalog (``catalog.switches.<model>.config``); nothing is
guessed from the vendor. The entry says which switches the target configures (by technology), what it
needs from the model (a located error names the missing field), and how it is written:

- a **template** target renders ``templates/<folder>/<role>.<template>.j2`` per routed switch into
  ``configs/<folder>/<switch>.<template>`` (:func:`twin.emit.configs.emit`, nothing else to write);
  ``shared`` snippets of the folder are rendered once per build and handed to every switch's template;
- a **built** target is written per switch by its builder (``twin/emit/configs.py`` ``BUILDERS``);
- a **subnet** target configures every switch at once through the subnet manager
  (``twin/emit/configs_ib.py``).

Every routed (RoCE) switch also gets an FRR config whatever its target: the routing stack SONiC runs
and what ``twin verify`` brings up.

>>> [t.name for t in TARGETS]
['sonic', 'eos', 'opensm', 'none']
>>> config_target("eos").template, config_target("sonic").needs[0].field
('cfg', 'port_map')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Need:
    """A switch-model field a target cannot do without."""

    field: str  # the SwitchModel field
    why: str  # what the target uses it for (the error message)
    example: str  # what to write ({model}: the switch model's name)
    configs_only: bool = False  # only the configs need it: without it the build writes everything else, with a warning


@dataclass(frozen=True)
class ConfigTarget:
    name: str  # as written in catalog.switches.<model>.config
    technologies: tuple[str, ...]  # the switch technologies it configures
    summary: str  # one line: the field reference
    folder: str | None = None  # configs/<folder>/ it writes; a template target's templates/<folder>/
    template: str | None = None  # template target: the file extension of one switch's config
    shared: tuple[str, ...] = ()  # template target: snippets rendered once per build (<folder>/<name>.j2)
    subnet: bool = False  # configured through the subnet manager: one configuration for the whole fabric
    needs: tuple[Need, ...] = ()
    breakouts: bool = False  # ports run in the port map's first breakout mode: every link speed must be one it allows


TARGETS: tuple[ConfigTarget, ...] = (
    ConfigTarget(
        "sonic", ("ethernet",), "SONiC config_db.json: ports from the port map, QoS, buffers (twin/compiler/config/sonic.py)",
        folder="sonic", breakouts=True, needs=(
            Need("port_map", "its SONiC config_db.json needs each port's lanes",
                 "catalog.switches.{model}.port_map with platform, hwsku, lanes_per_port, name_step, breakouts", configs_only=True),
            Need("buffer", "SONiC buffer pools are sized from it", "catalog.switches.{model}.buffer, e.g. 64 MiB"),
        )),
    ConfigTarget("eos", ("ethernet",), "Arista EOS running-config (templates/eos/)", folder="eos", template="cfg", shared=("port_qos",)),
    ConfigTarget("opensm", ("infiniband",), "the InfiniBand subnet manager OpenSM configures the switches (configs/opensm/)",
                 folder="opensm", subnet=True),
    ConfigTarget("none", ("ethernet", "infiniband"), "no switch OS configuration (a routed switch still gets its FRR config)"),
)
_BY_NAME = {t.name: t for t in TARGETS}

# The catalog's field: the registry's names
ConfigName = Literal[tuple(t.name for t in TARGETS)]


def config_target(name: str) -> ConfigTarget:
    """The registry entry of a target name (a switch model's ``config``)."""
    return _BY_NAME[name]


def check_technology(name: str, technology: str) -> None:
    """Raise ValueError when target ``name`` cannot configure a switch of ``technology``.

    >>> check_technology("eos", "infiniband")
    Traceback (most recent call last):
    ValueError: config 'eos' configures ethernet switches, not infiniband ones; one of: opensm, none
    """
    t = _BY_NAME[name]
    if technology not in t.technologies:
        fits = ", ".join(x.name for x in TARGETS if technology in x.technologies)
        raise ValueError(f"config '{name}' configures {' and '.join(t.technologies)} switches, not {technology} ones; one of: {fits}")
