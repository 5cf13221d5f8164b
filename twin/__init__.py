"""twin: a declarative design compiler and digital twin for AI training clusters.

``twin.load(path)`` runs the compiler passes on a site spec and returns the frozen
:class:`~twin.design.Design` that every emitter and the simulator read.
"""

from __future__ import annotations

__version__ = "0.1.0"


def load(path):
    """Validate and compile a site spec into a :class:`~twin.design.Design` (no files written).

    >>> d = load("sites/lab-2zone.yaml")      # paths relative to the repository root
    >>> d.spec.gpus
    128
    """
    from .pipeline import compile_design

    return compile_design(path)
