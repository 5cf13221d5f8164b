"""The fast template environment (twin/compiler/config/render.py) renders what Jinja's plain one does:
every FRR and EOS template on the example sites' switches, and, where the inline attribute lookup
raises instead of giving Jinja's undefined, ``render`` falls back to the plain environment."""

from __future__ import annotations

from functools import cache

import jinja2
import pytest
from conftest import SITES

import twin
from twin.compiler.config import render
from twin.emit import configs


@cache
def design(name: str):
    return twin.load(SITES / f"{name}.yaml")


@pytest.mark.parametrize("site", ["lab-2zone", "lab-campus"])
def test_fast_templates_render_what_jinja_renders(site):
    d = design(site)
    seen = set()
    port_qos = render.template("eos/port_qos.j2").render(site=d.intent.site).rstrip("\n")
    for sw in d.intent.switches.values():
        for name in (configs.FRR_TEMPLATE[sw.role], f"eos/{sw.role}.cfg.j2"):
            ctx = {"sw": sw, "site": d.intent.site, "port_qos": port_qos}
            plain = render.template(name).render(**ctx)
            assert render.fast_template(name).render(**ctx) == plain
            assert render.render(name, **ctx) == plain
            seen.add(name)
    assert {"frr/rtsw.conf.j2", "frr/ctsw.conf.j2", "eos/rtsw.cfg.j2", "eos/ctsw.cfg.j2"} <= seen


def test_inline_lookup_keeps_jinja_semantics():
    fast, plain = render.fast_environment(), render.environment()
    src = "{{ d.a }} {{ d.items is defined }} {{ o.real }} {{ d.zz is defined }}"
    ctx = {"d": {"a": 1}, "o": 2}
    assert plain.from_string(src).render(**ctx) == "1 True 2 False"
    with pytest.raises(AttributeError):  # the inline lookup raises where Jinja gives undefined ...
        fast.from_string(src).render(**ctx)
    assert fast.from_string("{{ d.a }} {{ o.real }} {{ d.update }}").render(**ctx).startswith("1 2 <built-in method update")
    with pytest.raises(jinja2.UndefinedError):  # ... and an error stays Jinja's error in the plain one
        plain.from_string("{{ d.zz }}").render(**ctx)
    assert "environment.getattr" not in fast.compile("{{ d.a }}", raw=True)
    assert "environment.getattr" in plain.compile("{{ d.a }}", raw=True)
