"""The input language: models, units, YAML loading with positions, and validation."""

from .diagnostics import Diagnostic, InfeasibleError, Severity, SpecError
from .validate import load_spec, validate_file, validate_text

__all__ = ["Diagnostic", "InfeasibleError", "Severity", "SpecError", "load_spec", "validate_file", "validate_text"]
