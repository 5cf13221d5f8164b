"""The template environment: compiled once per process, StrictUndefined, never evaluating user text.

Why: pyavd renders 10-18 devices/s partly because it rebuilds its templating state per device. Here
the environment and each template are built once (cached) and every device is one ``render`` call.
Autoescape is off (configs are not HTML), but no user-supplied text is ever used as a template:
names and descriptions from the spec only arrive as values in the context.
"""

from __future__ import annotations

from functools import lru_cache

import jinja2

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


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = _Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    return env


@lru_cache(maxsize=64)
def template(name: str) -> jinja2.Template:
    return environment().get_template(name)


def render(name: str, **context) -> str:
    return template(name).render(**context)
