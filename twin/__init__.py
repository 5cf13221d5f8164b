"""twin: a declarative design compiler and digital twin for AI training clusters.

``twin.load(path)`` runs the compiler passes on a site spec and returns the frozen
:class:`~twin.compiler.design.Design` that every emitter and the simulator read.
"""

from __future__ import annotations

from twin.version import __version__

__all__ = ["__version__", "load"]


def load(path):
    """Validate and compile a site spec into a :class:`~twin.compiler.design.Design` (no files written).

    >>> d = load("sites/lab-2zone.yaml")      # paths relative to the repository root
    >>> d.spec.gpus
    128
    """
    from twin.compiler.pipeline import compile_design

    return compile_design(path)
