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
from xml.sax.saxutils import escape, quoteattr

from twin.compiler.design import Design
from twin.compiler.fabric.graph import Fabric, Link

FORMAT = "twin-fabric/1"
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
    seen = {type(v) for v in values} - {type(None)}
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


def _column(kind: str, values: Sequence[object]) -> list[str | None]:
    """Formatted text of one column; each distinct value is formatted once (names, models and speeds
    repeat across thousands of rows)."""
    fmt = _FORMAT[kind]
    done = {v: fmt(v) for v in set(values) if v is not None}
    done[None] = None
    return [done[v] for v in values]


def _elements(prefix: str, names: list[str], rows: list[tuple], first: int) -> tuple[list[str], list[tuple]]:
    """(key declarations, formatted rows) for the columns ``first:`` of ``rows``."""
    types, cols = [], []
    for i, name in enumerate(names[first:], start=first):
        col = [r[i] for r in rows]
        t = _type(name, col)
        types.append(f'  <key id="{prefix}_{name}" for="{"node" if prefix == "n" else "edge"}" attr.name={xml_attr(name)} attr.type="{t}"/>\n')
        cols.append(_column(t, col))
    return types, list(zip(*cols)) if cols else [() for _ in rows]


def _data_template(prefix: str, names: list[str], present: tuple[bool, ...]) -> str:
    return "".join(f'<data key="{prefix}_{name}">{{}}</data>' for name, p in zip(names, present) if p)


def iter_graphml(model: Model) -> Iterator[str]:
    """The GraphML document as a stream of text chunks (one per line)."""
    fabric = model.fabric
    nkeys, ndata = _elements("n", model.node_fields, model.nodes, 1)
    ekeys, edata = _elements("e", LINK_FIELDS, model.links, 1)
    node_attr = {r[0]: xml_attr(r[0]) for r in model.nodes}

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
    # one template per pattern of present attributes (a NIC has server/gpu/rail, a spine no zone)
    templates: dict[tuple[bool, ...], str] = {}
    names = model.node_fields[1:]
    for row, data in zip(model.nodes, ndata):
        present = tuple(v is not None for v in data)
        tpl = templates.get(present)
        if tpl is None:
            tpl = templates[present] = "    <node id={}>" + _data_template("n", names, present) + "</node>\n"
        yield tpl.format(node_attr[row[0]], *(v for v in data if v is not None))
    etpl = "    <edge id={} source={} target={}>" + _data_template("e", LINK_FIELDS[1:], (True,) * (len(LINK_FIELDS) - 1)) + "</edge>\n"
    for row, data in zip(model.links, edata):
        yield etpl.format(xml_attr(row[0]), node_attr[row[3]], node_attr[row[5]], *data)
    yield "  </graph>\n</graphml>\n"


def graphml(fabric: Fabric, site: str) -> bytes:
    return "".join(iter_graphml(Model(fabric, site))).encode("utf-8")


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


def emit(design: Design) -> dict[str, bytes]:
    fabric = design.fabric
    if fabric is None:
        return {}
    model = Model(fabric, design.name)
    js = json.dumps(document(design, model), separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n"
    return {"model/fabric.graphml": "".join(iter_graphml(model)).encode("utf-8"), "model/fabric.json": js.encode("utf-8")}
