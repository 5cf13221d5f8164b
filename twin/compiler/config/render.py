"""The template environment: compiled once per process, StrictUndefined, never evaluating user text.

Why: pyavd renders 10-18 devices/s partly because it rebuilds its templating state per device. Here
the environment and each template are built once (cached) and every device is one ``render`` call.
Autoescape is off (configs are not HTML), but no user-supplied text is ever used as a template:
names and descriptions from the spec only arrive as values in the context.

Attribute lookups are most of a config template's work (``nb.ifname`` for every port of every
switch: ~1.5M for meta-24k-roce). Jinja compiles each one to a call of ``environment.getattr``; the
fast environment compiles ``name.attr`` to the lookup itself, inline (a key of a plain dict, else
the attribute), and lets a missing attribute raise. A template that needs Jinja's own
behaviour there (an ``is defined`` test, a dict's method, an undefined name) then renders again in
the plain environment, whose output or error is Jinja's: the fast one only ever returns what the
plain one would.
"""

from __future__ import annotations

import keyword
from functools import lru_cache
from io import StringIO

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator

from twin.resources import data_dir


class _Environment(jinja2.Environment):
    """The site context is a plain dict: look its keys up first (Jinja's default tries a Python
    attribute first, which for a dict fails and costs an exception or a fallback on every lookup); a
    switch's intent (:class:`twin.compiler.config.intent.SwitchIntent`) is read by attribute."""

    def getattr(self, obj, attribute):
        if isinstance(obj, dict):
            try:
                return obj[attribute]
            except KeyError:
                pass
        else:  # Jinja's own first try, without its call (1.25M of these for meta-24k-roce's configs)
            try:
                return getattr(obj, attribute)
            except AttributeError:
                pass
        return super().getattr(obj, attribute)


class _InlineGetattr(CodeGenerator):
    """``name.attr`` as ``(name['attr'] if type(name) is dict and 'attr' in name else name.attr)``
    (a plain dict's key, else the attribute: a dict's method too, ``policies.update``): no call, and a
    miss raises AttributeError instead of returning Jinja's undefined."""

    def visit_Getattr(self, node: nodes.Getattr, frame) -> None:
        attr = node.attr
        if not isinstance(node.node, nodes.Name) or not attr.isidentifier() or keyword.iskeyword(attr):
            return super().visit_Getattr(node, frame)
        self.write("")  # any pending line break and indentation go to the real stream first
        stream, self.stream = self.stream, StringIO()
        try:
            self.visit(node.node, frame)  # a local's name, or Jinja's pure guard for an undefined one
            obj = self.stream.getvalue()
        finally:
            self.stream = stream
        self.write(f"({obj}[{attr!r}] if type({obj}) is dict and {attr!r} in {obj} else {obj}.{attr})")


class _FastEnvironment(_Environment):
    code_generator_class = _InlineGetattr


def _make(cls: type[jinja2.Environment]) -> jinja2.Environment:
    return cls(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """Jinja's semantics: what a template renders to, or the error it raises."""
    return _make(_Environment)


@lru_cache(maxsize=1)
def fast_environment() -> jinja2.Environment:
    return _make(_FastEnvironment)


@lru_cache(maxsize=64)
def template(name: str) -> jinja2.Template:
    return environment().get_template(name)


@lru_cache(maxsize=64)
def fast_template(name: str) -> jinja2.Template:
    return fast_environment().get_template(name)


def render(name: str, **context) -> str:
    try:
        return fast_template(name).render(**context)
    except Exception:  # noqa: BLE001 - whatever it was, the plain environment renders or raises Jinja's error
        return template(name).render(**context)
