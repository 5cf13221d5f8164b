"""YAML loading that remembers where every value came from.

We compose the YAML with PyYAML's *safe* loader (no tags that build Python objects) and convert the node
tree ourselves, recording the line and column of every key and value under its path. Diagnostics found
later (by pydantic or by the design checks) are keyed by a field path; this map turns the path into
``FILE:LINE:COL`` so a user can jump to the spot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from twin.lang import limits
from twin.lang.diagnostics import Diagnostic, Severity
from twin.lang.files import FileRefused, read_bytes

try:  # the C loader is ~10x faster; fall back when libyaml is absent
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader

PathT = tuple[str | int, ...]
MAX_DEPTH = 64
MAX_INT_DIGITS = 30  # far beyond any count, seed or size a spec holds; Python refuses int() past 4,300
_PLAIN_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:omap"}
_INT = "tag:yaml.org,2002:int"


@dataclass
class Source:
    """A loaded YAML document: plain data plus the position of every path in it.

    ``inherited`` is filled by :func:`twin.lang.site.hall_types.expand`: for a path of an expanded hall that
    came from its hall type, which hall and which type path (its position is the type's line).
    ``moved`` is filled by :func:`twin.lang.site.campus.expand`: a hall written under a building
    (``("halls", 5)`` -> ``("buildings", 1, "halls", 2)``).
    """

    path: str
    data: Any
    text: str
    positions: dict[PathT, tuple[int, int]] = field(default_factory=dict)
    inherited: dict[PathT, Any] = field(default_factory=dict)
    moved: dict[PathT, PathT] = field(default_factory=dict)
    tagged: bool = False  # the text has a '!': scalars are checked for explicit tags

    def anchor(self, loc: PathT) -> PathT:
        """The nearest path on ``loc`` (itself or an ancestor) that has a position; ``()`` if none."""
        loc = tuple(loc)
        while loc and loc not in self.positions:
            loc = loc[:-1]
        return loc

    def locate(self, loc: PathT) -> tuple[int, int]:
        """Best position for ``loc``: the value itself, else its nearest existing ancestor."""
        return self.positions.get(self.anchor(loc), (1, 1))


class LoadError(Exception):
    def __init__(self, diagnostics: list[Diagnostic]):
        super().__init__("; ".join(d.message for d in diagnostics))
        self.diagnostics = diagnostics


def load_text(text: str, path: str = "<string>") -> Source:
    """Parse ``text`` into a :class:`Source`; raise :class:`LoadError` with positioned diagnostics."""
    if msg := limits.exceeded("input_bytes", len(text.encode("utf-8", "replace"))):
        raise LoadError([Diagnostic(Severity.ERROR, path, 1, 1, (), msg, "a smaller file")])
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        msg = " ".join(x for x in (e.context, e.problem) if x) or "invalid YAML"
        raise LoadError([Diagnostic(Severity.ERROR, path, line, col, (), f"YAML syntax: {msg}")]) from None
    except yaml.YAMLError as e:
        raise LoadError([Diagnostic(Severity.ERROR, path, 1, 1, (), f"YAML: {e}")]) from None
    src = Source(path=path, data=None, text=text, tagged="!" in text)  # a tag needs a '!': most files have none
    errors: list[Diagnostic] = []
    if node is None:
        raise LoadError([Diagnostic(Severity.ERROR, path, 1, 1, (), "the file is empty", "a site mapping")])
    budget = [int(limits.value("yaml_values"))]  # aliases can expand exponentially ("billion laughs"): cap the converted size
    try:
        src.data = _convert(node, (), src, errors, loader, 0, budget)
    finally:
        loader.dispose()
    if errors:
        raise LoadError(errors)
    return src


def load_file(path: str | Path) -> Source:
    try:
        raw = read_bytes(Path(path), "input_bytes", "YAML file")
    except FileRefused as e:
        raise LoadError([Diagnostic(Severity.ERROR, str(path), 0, 0, (), str(e), "a YAML file")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LoadError([Diagnostic(Severity.ERROR, str(path), 1, 1, (), f"not UTF-8 text ({e.reason})")]) from None
    return load_text(text, str(path))


def _convert(
    node: yaml.Node, loc: PathT, src: Source, errors: list[Diagnostic], loader, depth: int, budget: list[int]
) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        if budget[0] == -1:
            errors.append(Diagnostic(Severity.ERROR, src.path, 1, 1, (), "the document expands to too many values (aliases?): " + limits.message(
                "yaml_values", limits.value("yaml_values") + 1, "values or more")))
        return None
    pos = (node.start_mark.line + 1, node.start_mark.column + 1)
    src.positions.setdefault(loc, pos)
    if depth > MAX_DEPTH:
        errors.append(Diagnostic(Severity.ERROR, src.path, *pos, loc, "nesting deeper than 64 levels"))
        return None
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.tag not in _PLAIN_TAGS:
        errors.append(Diagnostic(Severity.ERROR, src.path, *pos, loc, f"YAML tag '{_short(node.tag)}' is not allowed", "plain YAML"))
        return None
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                errors.append(Diagnostic(Severity.ERROR, src.path, *pos, loc, "YAML merge keys (<<) are not supported"))
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                kp = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                errors.append(Diagnostic(Severity.ERROR, src.path, *kp, loc, "a mapping key must be a plain scalar"))
                continue
            key = str(key_node.value)
            kp = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            if key in out:
                errors.append(
                    Diagnostic(Severity.ERROR, src.path, *kp, loc + (key,), f"duplicate key '{key}'", "each key once")
                )
                continue
            src.positions[loc + (key,)] = (value_node.start_mark.line + 1, value_node.start_mark.column + 1)
            out[key] = _convert(value_node, loc + (key,), src, errors, loader, depth + 1, budget)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(v, loc + (i,), src, errors, loader, depth + 1, budget) for i, v in enumerate(node.value)]
    if src.tagged and node.tag != _implicit(loader, node):  # an explicit tag (!!int x, !!binary, !custom): plain values only
        errors.append(Diagnostic(Severity.ERROR, src.path, *pos, loc, f"YAML tag '{_short(node.tag)}' is not allowed",
                                 "a plain value (quote it to make it a string)"))
        return None
    if node.tag == _INT and len(node.value.lstrip("+-").replace("_", "")) > MAX_INT_DIGITS:
        errors.append(Diagnostic(Severity.ERROR, src.path, *pos, loc, f"an integer of {len(node.value):,} characters",
                                 f"at most {MAX_INT_DIGITS} digits"))
        return None
    try:
        return loader.construct_object(node, deep=True)
    except (yaml.YAMLError, ValueError, ArithmeticError, KeyError) as e:
        errors.append(Diagnostic(Severity.ERROR, src.path, *pos, loc, f"YAML value: {getattr(e, 'problem', e)}"))
        return None


def _implicit(loader, node: yaml.ScalarNode) -> str:
    """The tag YAML gives the scalar's text without a tag (int for ``5``, str for ``'5'``)."""
    plain = node.style in (None, "")  # PyYAML says None, libyaml says ""
    return loader.resolve(yaml.ScalarNode, node.value, (plain, not plain))


def _short(tag: str) -> str:
    """``tag:yaml.org,2002:int`` as written: ``!!int``."""
    return "!!" + tag[len("tag:yaml.org,2002:"):] if tag.startswith("tag:yaml.org,2002:") else tag
