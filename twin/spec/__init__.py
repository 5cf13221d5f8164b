"""The input language: models, units, YAML loading with positions, and validation.

``validate_text``/``validate_file``/``load_spec`` are loaded on first use: validation reads the
fabric's shape (:mod:`twin.fabric.shape`), which itself reads the models, so importing the package
must not import validation eagerly.
"""

from .diagnostics import Diagnostic, InfeasibleError, Severity, SpecError

__all__ = ["Diagnostic", "InfeasibleError", "Severity", "SpecError", "load_spec", "validate_file", "validate_text"]


def __getattr__(name: str):
    if name in ("load_spec", "validate_file", "validate_text"):
        from . import validate

        return getattr(validate, name)
    raise AttributeError(f"module 'twin.spec' has no attribute {name!r}")
