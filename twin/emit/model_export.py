"""model/fabric.graphml and model/fabric.json: the fabric graph for other tools.

Why a GraphML writer of our own: ``networkx.write_graphml`` builds an ElementTree of the whole graph
(one element object per attribute value) before it serialises, which took ~12-17 s for meta-24k-roce
and dominated ``twin build``. GraphML is a flat format, so this module streams it instead: one line
per node and per edge, formatted from the graph's own tuples, with a per-build cache for the escaped
form of values that repeat (device names appear on every link). Both files for meta-24k-roce now
take about 1 s together (``bench/bench_fabric.py`` prints the export time per cluster size).

What keeps the files loadable and byte-stable:

- nodes in graph insertion order, edges in link-id order (cables, then host edges) with
  ``source`` = the lower-level end ``a`` and the link id as the GraphML edge id, so
  ``networkx.read_graphml(..., force_multigraph=True)`` gives back the same keys;
- one typed ``<key>`` per attribute, its type taken from the values present (``long``, ``double``,
  ``boolean``, ``string``) and declared in a fixed order (the contract's fields first, then any other
  attribute by name), so a reader gets ints back as ints and a new attribute is never dropped;
- a None attribute (a spine's zone) is left out of that element: GraphML has no null. The JSON keeps
  it as ``null`` in its column;
- text is escaped with :func:`xml.sax.saxutils.escape` / :func:`~xml.sax.saxutils.quoteattr`;
  characters XML 1.0 cannot carry at all (control characters) are refused rather than written into a
  file no parser would read.

The JSON model is columnar (field names once, then one array per node and per link) to stay compact
for 100K-GPU sites.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from xml.sax.saxutils import escape, quoteattr

import orjson

from twin.compiler.design import Design
from twin.compiler.fabric.graph import Fabric, Link

FORMAT = "twin-fabric/1"
CHUNK = 100_000  # nodes or edges joined at a time
# The graph contract's node attributes in the order readers expect them (ARCHITECTURE.md).
NODE_FIELDS = ["id", "role", "level", "model", "hall", "zone", "rack", "u", "server", "gpu", "rail", "gpus"]
LINK_FIELDS = ["id", "kind", "tier", "a", "a_port", "b", "b_port", "speed"]

_GRAPHML_TYPE = {bool: "boolean", int: "long", float: "double", str: "string"}
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# Anything escape/quoteattr would touch, or that XML cannot hold: values without these (almost all)
# are written as they are, which saves most of the escaping cost on 100K-node graphs.
_SPECIAL = re.compile("[&<>\"'\t\n\r\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_LINK_COLUMNS = operator.itemgetter(*(Link._fields.index(f) for f in LINK_FIELDS))  # Link tuple -> LINK_FIELDS order


class Model:
    """The rows both exports write, read from the graph once: node rows in insertion order (the
    node id, then one value per ``node_fields`` entry, None where a node lacks the attribute) and
    link rows in link-id order (``LINK_FIELDS``)."""

    def __init__(self, fabric: Fabric, site: str):
        self.fabric, self.site = fabric, site
        self.node_fields = node_fields(fabric)
        rest = self.node_fields[1:]
        self.nodes = [(n, *map(d.get, rest)) for n, d in fabric.graph.nodes(data=True)]
        self.links = list(map(_LINK_COLUMNS, fabric.links))
        # the same rows by column (one transposition in C), which the GraphML writer formats column by column
        self.node_cols = list(zip(*self.nodes)) or [() for _ in self.node_fields]
        self.link_cols = list(zip(*self.links)) or [() for _ in LINK_FIELDS]


def node_fields(fabric: Fabric) -> list[str]:
    """Every node attribute present in the graph: the contract's fields first, then others by name,
    so an attribute a later pass adds is exported instead of silently dropped.

    >>> import networkx as nx
    >>> g = nx.MultiGraph(); g.add_node("x", role="leaf", level=1, colour="red")
    >>> node_fields(Fabric(g, "fat-tree", "infiniband", (), (), ()))
    ['id', 'role', 'level', 'colour']
    """
    present: set[str] = set()
    for _, d in fabric.graph.nodes(data=True):
        present.update(d)
    return ["id", *(f for f in NODE_FIELDS[1:] if f in present), *sorted(present - set(NODE_FIELDS))]


def _type(name: str, values: Iterable[object]) -> str:
    """The GraphML type of one column from the values present (None ignored; int with float is
    double). A column mixing text and numbers is a bug in the pass that made the graph."""
    seen = set(map(type, values)) - {type(None)}
    kinds = {_GRAPHML_TYPE.get(t) for t in seen}
    if None in kinds:
        raise TypeError(f"fabric attribute '{name}' holds {sorted(t.__name__ for t in seen)}; the export writes only int, float, bool and str")
    if kinds == {"long", "double"}:
        return "double"
    if len(kinds) > 1:
        raise TypeError(f"fabric attribute '{name}' mixes {sorted(kinds)}; one type per attribute")
    return kinds.pop() if kinds else "string"


def _checked(s: str) -> str:
    if _XML_ILLEGAL.search(s):
        raise ValueError(f"{s!r} holds a character XML 1.0 cannot represent; it cannot go into fabric.graphml")
    return s


def xml_text(s: str) -> str:
    """Element text: ``&``, ``<``, ``>`` escaped.

    >>> xml_text("a<b & c")
    'a&lt;b &amp; c'
    """
    return escape(_checked(s)) if _SPECIAL.search(s) else s


def xml_attr(s: str) -> str:
    """A quoted attribute value (quotes, whitespace control characters and markup escaped).

    >>> print(xml_attr("r1"), xml_attr("a&b"), xml_attr('say "x"'))
    "r1" "a&amp;b" 'say "x"'
    """
    return quoteattr(_checked(s)) if _SPECIAL.search(s) else f'"{s}"'


def _double(v: float) -> str:
    if not math.isfinite(v):
        raise ValueError(f"{v} is not a finite number; fabric.graphml writes finite doubles only")
    return repr(float(v))


_FORMAT = {"string": xml_text, "long": lambda v: str(int(v)), "double": _double, "boolean": lambda v: "true" if v else "false"}


def _pieces(prefix: str, name: str, kind: str, values: Sequence[object]) -> list[str]:
    """Each value of one column as its ``<data>`` element; each distinct value is formatted once (names,
    models and speeds repeat across thousands of rows). A node leaves out an attribute that is None
    (the empty string); an edge writes every attribute, None as the text None."""
    fmt, open_ = _FORMAT[kind], f'<data key="{prefix}_{name}">'
    done = {v: f"{open_}{fmt(v)}</data>" for v in set(values) if v is not None}
    done[None] = "" if prefix == "n" else f"{open_}None</data>"
    return list(map(done.__getitem__, values))


def _elements(prefix: str, names: list[str], cols: list[Sequence[object]], first: int) -> tuple[list[str], list[list[str]]]:
    """(key declarations, ``<data>`` elements column by column) for the columns ``first:``."""
    types, pieces = [], []
    for name, col in zip(names[first:], cols[first:], strict=True):
        t = _type(name, col)
        types.append(f'  <key id="{prefix}_{name}" for="{"node" if prefix == "n" else "edge"}" attr.name={xml_attr(name)} attr.type="{t}"/>\n')
        pieces.append(_pieces(prefix, name, t, col))
    return types, pieces


def _attrs(values: Sequence[str]) -> list[str]:
    """:func:`xml_attr` of each value; one search of them all when none needs escaping (ids rarely do)."""
    if _SPECIAL.search("".join(values)):
        return list(map(xml_attr, values))
    return ['"' + v + '"' for v in values]


def iter_graphml(model: Model) -> Iterator[str]:
    """The GraphML document as a stream of text chunks (the head line by line, then the nodes and the edges
    ``CHUNK`` at a time: the gigawatt site's ~1.4 GB of lines never sit in memory as one string).
    Lines are joined column by column (C loops): a node's ``<data>`` elements are its columns' elements,
    an absent attribute's the empty string."""
    fabric = model.fabric
    nkeys, ndata = _elements("n", model.node_fields, model.node_cols, 1)
    ekeys, edata = _elements("e", LINK_FIELDS, model.link_cols, 1)
    node_attr = dict(zip(model.node_cols[0], _attrs(model.node_cols[0])))

    yield '<?xml version="1.0" encoding="UTF-8"?>\n'
    yield ('<graphml xmlns="http://graphml.graphdrawing.org/xmlns" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
           'xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">\n')
    graph_attrs = [("format", FORMAT), ("site", model.site), ("family", fabric.family), ("technology", fabric.technology)]
    for name, _ in graph_attrs:
        yield f'  <key id="g_{name}" for="graph" attr.name="{name}" attr.type="string"/>\n'
    yield from nkeys
    yield from ekeys
    yield '  <graph id="fabric" edgedefault="undirected">\n'
    yield "    " + "".join(f'<data key="g_{name}">{xml_text(v)}</data>' for name, v in graph_attrs) + "\n"
    names = model.node_cols[0]
    for i in range(0, len(names), CHUNK):
        yield "".join(map("".join, zip(repeat("    <node id="), map(node_attr.__getitem__, names[i:i + CHUNK]), repeat(">"),
                                       *(col[i:i + CHUNK] for col in ndata), repeat("</node>\n"))))
    ids, a, b = model.link_cols[0], model.link_cols[3], model.link_cols[5]
    for i in range(0, len(ids), CHUNK):
        yield "".join(map("".join, zip(repeat("    <edge id="), _attrs(ids[i:i + CHUNK]), repeat(" source="), map(node_attr.__getitem__, a[i:i + CHUNK]),
                                       repeat(" target="), map(node_attr.__getitem__, b[i:i + CHUNK]), repeat(">"),
                                       *(col[i:i + CHUNK] for col in edata), repeat("</edge>\n"))))
    yield "  </graph>\n</graphml>\n"


def graphml(fabric: Fabric, site: str) -> bytearray:
    return _encoded(iter_graphml(Model(fabric, site)))


def _encoded(chunks: Iterable[str]) -> bytearray:
    """The chunks as UTF-8, encoded one at a time, in the buffer they were appended to: a ``bytes`` copy of
    it would hold the file twice at once (2 GB more at the peak of a 2-plane million-GPU build); the build
    hashes and writes any bytes-like value."""
    out = bytearray()
    for chunk in chunks:
        out += chunk.encode("utf-8")
    return out


def document(design: Design, model: Model | None = None) -> dict:
    fabric = design.fabric
    model = model or Model(fabric, design.name)
    return {
        "format": FORMAT,
        "site": design.name,
        "family": fabric.family,
        "technology": fabric.technology,
        "tiers": list(fabric.tiers),
        "roles": list(fabric.roles),
        "node_fields": model.node_fields,
        "nodes": model.nodes,
        "link_fields": LINK_FIELDS,
        "links": model.links,
    }


def emit(design: Design) -> dict[str, bytes | bytearray]:
    fabric = design.fabric
    if fabric is None:
        return {}
    model = Model(fabric, design.name)
    return {"model/fabric.graphml": _encoded(iter_graphml(model)), "model/fabric.json": compact_json(document(design, model), model)}


def emit_stream(design: Design) -> tuple[dict[str, bytes], list[tuple[str, Iterator[bytes]]]]:
    """:func:`emit` for a build writing to disk: ``fabric.json`` as bytes and ``fabric.graphml`` as chunks of
    bytes to write as they come (:func:`twin.output.write_stream`), never the whole file in memory (2 GB
    on a 2-plane million-GPU site)."""
    fabric = design.fabric
    if fabric is None:
        return {}, []
    model = Model(fabric, design.name)
    js = compact_json(document(design, model), model)
    return {"model/fabric.json": js}, [("model/fabric.graphml", (c.encode("utf-8") for c in iter_graphml(model)))]


emit.stream = emit_stream  # the build's way (twin.build._write_emitters); render() and diff read emit's bytes


def compact_json(doc: dict, model: Model) -> bytes:
    """``json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\\n"`` as UTF-8,
    written by orjson (the standard library's encoder takes ~0.2 s for a 24K-GPU site's model) where the
    two write the same: every float of the rows spelled alike (orjson writes ``1e16`` where ``repr`` writes
    ``1e+16``, and NaN as null), no escape in the output (orjson's and the standard library's could
    differ), nothing orjson refuses (integers beyond 64 bits, a lone surrogate). Otherwise the standard
    library writes it, with its own errors."""
    floats = {v for col in (*model.node_cols, *model.link_cols) if float in set(map(type, col)) for v in col if type(v) is float}
    if all(orjson.dumps(v) == float.__repr__(v).encode() for v in floats):
        try:
            raw = orjson.dumps(doc, option=orjson.OPT_APPEND_NEWLINE)
        except (orjson.JSONEncodeError, TypeError):
            raw = b"\\"
        if b"\\" not in raw:
            return raw
    return (json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
