"""The tool's version, one owner: the package metadata reads it from here (pyproject)."""

__version__ = "0.1.0"
