"""Where the package's data directories are: inside the package when installed, beside it in a checkout.

The repository keeps ``templates/`` (Jinja2 config templates) and ``schemas/`` (the JSON Schema and
Markdown reference of each input language, and the results schema) at its top level. A wheel ships them inside the package as
``twin/templates`` and ``twin/schemas`` (``pyproject.toml`` maps them there); an editable install or a
checkout on ``PYTHONPATH`` has only the top-level copies. :func:`data_dir` answers with whichever exists,
the packaged copy first.

>>> (data_dir("templates") / "frr" / "rtsw.conf.j2").is_file()
True
>>> len([p for p in data_dir("schemas").iterdir() if p.suffix in (".json", ".md")])   # 3 languages x 2, results, --json envelope
8
>>> (data_dir("schemas") / "twin-site.schema.json").is_file(), (data_dir("schemas") / "twin-results.schema.json").is_file()
(True, True)
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

# On disk for every pip install (wheels are installed unpacked), so a plain Path: Jinja2's
# FileSystemLoader and the schema check read from it directly.
PACKAGE = Path(str(files("twin"))).resolve()
NAMES = ("templates", "schemas")


def candidates(name: str) -> list[Path]:
    """The places ``name`` may be, in the order they are tried: inside the package, then the checkout.

    >>> [p.relative_to(PACKAGE.parent).as_posix() for p in candidates("schemas")]
    ['twin/schemas', 'schemas']
    """
    if name not in NAMES:
        raise ValueError(f"unknown data directory {name!r} (expected one of {', '.join(NAMES)})")
    return [PACKAGE / name, PACKAGE.parent / name]


def data_dir(name: str) -> Path:
    """The directory holding the package's ``templates`` or ``schemas``."""
    for path in candidates(name):
        if path.is_dir():
            return path
    tried = ", ".join(str(p) for p in candidates(name))
    raise FileNotFoundError(f"twin's {name} directory is missing (looked in {tried}); reinstall twin")


def in_checkout() -> bool:
    """True when twin runs from a source checkout (editable install or ``PYTHONPATH``), not a wheel.

    A checkout is where ``twin schema`` writes the committed ``schemas/`` files; an installed package
    only carries a read-only copy of them.
    """
    return not (PACKAGE / "schemas").is_dir() and (PACKAGE.parent / "schemas").is_dir()
