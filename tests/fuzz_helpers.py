"""Mutations for the property tests of every input surface (scenario, sweep, temperature CSV).

A mutation sets or deletes a value at a path of a valid document, or cuts and inserts text. The junk
covers what a careless user or an attacker writes: type swaps, huge, zero, negative, NaN and infinite
numbers, unit swaps, unicode and control characters, YAML tags, aliases, deep nesting.
"""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is not installed (a test extra: pip install -e '.[test]')")
from hypothesis import strategies as st

from twin.lang.diagnostics import Diagnostic, Severity

NUMBERS = st.one_of(
    st.integers(min_value=-(10**12), max_value=10**12),
    st.sampled_from([0, -1, 1, 2**31, 2**63, -(2**63), 10**25]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-300, 1e300, float("nan"), float("inf"), -float("inf")]),
)
QUANTITIES = st.sampled_from([
    "700 W", "-5 kW", "1e400 W", "0 B", "-1 MiB", "0.000001 B", "1e30 GiB", "nan MiB", "inf s", "-inf s", "1 ns", "0 s",
    "400 days", "1e9 / day", "0 / day", "-3 / year", "1 us", "1 ms", "25 degC", "-500 degC", "1e9 degC", "3 m", "2 h",
    "400 Gbit/s", "1 kWh", "5 MW/s", "1 Hz", "30 min", "1:7", "0:0", "1-3", "9-2", "all", "", " ", "../x", "/etc/passwd",
])
TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["=HYPERLINK(\"x\")", "@SUM(A1)", "+1", "a\nb", "\x00", "\u202e", "e-ecmp\n router bgp 1", "é", "漢字",
                     "Ethernet{n}", "{cage}/{sub}", "x" * 300, "!!int x", "*a", "&a", "<<", "{", "}", "'", '"']),
)
JUNK = st.one_of(
    st.none(), st.booleans(), NUMBERS, QUANTITIES, TEXT,
    st.lists(st.one_of(st.integers(min_value=-3, max_value=300), QUANTITIES), max_size=4),
    st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), QUANTITIES), max_size=2),
    st.recursive(st.integers(), lambda c: st.lists(c, max_size=2), max_leaves=80),  # deep nesting
)
# inserted into the text: YAML syntax, tags, anchors and aliases, flow collections, huge integers
SNIPPETS = st.one_of(
    st.text(alphabet=" \t\n:-[]{}&*!|>'\"#%@`,?0123456789abcWkmsBi/", max_size=6),
    st.sampled_from(["!!int x", "!!float", "!!binary aGk=", "!!python/object:os.system", "!custom", "&a ", "*a", "<<: *a",
                     "[" * 80, "9" * 5000, ".nan", ".inf", "-.inf", "~", "\x00", "\ufeff", "\u202e", "\t", "\r\n"]),
)


# "scale": a number or a quantity's number times one of these; "unit": a quantity's unit swapped
FACTORS = st.sampled_from([0, -1, 1e-9, 1e-3, 0.5, 2, 1e3, 1e9, 1e300, float("inf"), float("nan")])
UNITS = st.sampled_from(["B", "GiB", "TiB", "bit", "ns", "us", "ms", "s", "min", "h", "day", "year", "W", "kW", "MW",
                         "degC", "K", "degF", "m", "km", "Hz", "Gbit/s", "USD", "/ day", "/ h", "furlong", ""])


def _scaled(old, op, value):
    import re

    if op == "scale" and isinstance(old, (int, float)) and not isinstance(old, bool):
        return old * value
    m = re.fullmatch(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*)", old) if isinstance(old, str) else None
    if m is None:
        raise TypeError("not a number or a quantity")
    if op == "scale":
        return f"{float(m.group(1)) * value:g} {m.group(2)}"
    return f"{m.group(1)} {value}"


def paths(node, prefix=()):
    """Every path of a YAML document (mappings by key, lists by index)."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, prefix + (i,))


def mutations(all_paths: list[tuple], max_size: int = 3):
    """``(op, path, value)`` lists: set a junk value, delete, scale a number or swap a quantity's unit."""
    one = st.one_of(st.tuples(st.sampled_from(["set", "set", "delete"]), st.sampled_from(all_paths), st.one_of(JUNK, QUANTITIES)),
                    st.tuples(st.just("scale"), st.sampled_from(all_paths), FACTORS),
                    st.tuples(st.just("unit"), st.sampled_from(all_paths), UNITS))
    return st.lists(one, min_size=1, max_size=max_size)


# what breaks physics rather than types: zero, negative, tiny, huge, infinite, NaN, a yes/no for a number
EDGES = st.sampled_from([0, -1, 0.0, -0.0, 1e-300, 1e30, 10**20, float("inf"), -float("inf"), float("nan"), True, False])


def physical_mutations(all_paths: list[tuple], max_size: int = 2):
    """Mutations aimed at the domain of numbers (catalog figures, job fields): scale a value or a
    quantity's number by an edge factor, or set an edge value; now and then a junk value."""
    one = st.one_of(st.tuples(st.just("scale"), st.sampled_from(all_paths), FACTORS),
                    st.tuples(st.just("set"), st.sampled_from(all_paths), EDGES),
                    st.tuples(st.just("set"), st.sampled_from(all_paths), JUNK))
    return st.lists(one, min_size=1, max_size=max_size)


def mutate(doc, ops) -> None:
    """Apply ``(op, path, value)`` in place; a mutation whose parent an earlier one removed (or that does
    not apply to the value there) is skipped."""
    for op, path, value in ops:
        node = doc
        try:
            for p in path[:-1]:
                node = node[p]
            if op == "set":
                node[path[-1]] = value
            elif op == "delete":
                del node[path[-1]]
            else:
                node[path[-1]] = _scaled(node[path[-1]], op, value)
        except (KeyError, IndexError, TypeError):
            continue


def assert_located(diags: list[Diagnostic], files: tuple[str, ...]) -> None:
    """Errors with a file the user gave, a position and a message (FILE:LINE:COL: ...)."""
    errors = [d for d in diags if d.severity is Severity.ERROR]
    assert errors, diags
    for d in errors:
        assert d.file in files, (d.file, files)
        assert d.line >= 1 and d.col >= 1 and d.message.strip(), d
        assert d.format().startswith(f"{d.file}:{d.line}:{d.col}:")
